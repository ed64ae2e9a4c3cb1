"""Readable logs during outages: one line per distinct condition, with a count, instead of a flood.

librdkafka retries an unreachable broker every few hundred milliseconds and kazoo an unreachable ZooKeeper
every second, each with a log line; a bridge with three Kafka clients and a kazoo client would write hundreds
of lines a minute and hide the few that say what is down. `RepeatFilter` lets the first line of a condition
through, swallows its repeats for `window_s`, and then lets one through again with how many it swallowed.
Every librdkafka client of the project logs through `LIBRDKAFKA_LOGGER` (confluent-kafka's `logger`
setting), and both that logger and kazoo's carry the filter from this module's import on.
"""

from __future__ import annotations

import logging
import re
import threading
import time

LIBRDKAFKA_LOGGER = "migrator.librdkafka"
KAZOO_LOGGER = "kazoo.client"  # kazoo's client and its connection thread log here
REPEAT_WINDOW_S = 30.0

# What differs between repeats of one condition: librdkafka's own count of the repeats it suppressed, client
# names ([rdkafka#consumer-3]) and numbers (ports, broker ids, elapsed milliseconds).
_SUPPRESSED = re.compile(r", \d+ identical error\(s\) suppressed")
_VARIABLE = re.compile(r"\[[^\]]*#[^\]]*\]|\d+")


def condition(message: str) -> str:
    """The key under which repeats of a log line are merged."""
    return _VARIABLE.sub("#", _SUPPRESSED.sub("", message))


class RepeatFilter(logging.Filter):
    """Pass the first record of each condition, then at most one per `window_s` with the count of the swallowed
    ones appended. Thread-safe: librdkafka's lines arrive on several clients' poll threads."""

    def __init__(self, window_s: float = REPEAT_WINDOW_S) -> None:
        super().__init__()
        self.window_s = window_s
        self._lock = threading.Lock()
        self._seen: dict[tuple[int, str], tuple[float, int]] = {}  # key -> (last passed at, swallowed since)

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.levelno, condition(record.getMessage()))
        now = time.monotonic()
        with self._lock:
            passed_at, swallowed = self._seen.get(key, (None, 0))
            if passed_at is not None and now - passed_at < self.window_s:
                self._seen[key] = (passed_at, swallowed + 1)
                return False
            self._seen[key] = (now, 0)
            if len(self._seen) > 1000:  # conditions of a long-gone outage
                self._seen = {k: v for k, v in self._seen.items() if now - v[0] < self.window_s}
        if swallowed and passed_at is not None:
            record.msg = f"{record.getMessage()} (and {swallowed} more like it in the last {now - passed_at:.0f}s)"
            record.args = None
        return True


def install(names: tuple[str, ...] = (LIBRDKAFKA_LOGGER, KAZOO_LOGGER)) -> None:
    """Attach one `RepeatFilter` to each of these loggers, by default librdkafka's and kazoo's (idempotent)."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RepeatFilter) for f in logger.filters):
            logger.addFilter(RepeatFilter())


def librdkafka_logger() -> logging.Logger:
    """The `logger` setting for every confluent-kafka client of the project."""
    install()
    return logging.getLogger(LIBRDKAFKA_LOGGER)


install()
