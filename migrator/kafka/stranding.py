"""Clients that librdkafka has stranded: not connected to any broker and not trying to, a state it never leaves
by itself after a dead end (see `reach_of`). The record fetcher and the embedded member each keep a
`StrandingWatch` over their client, fed by the client's statistics, and replace the client once it has been
stranded for `STRANDED_S` while a bootstrap server answers.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

__all__ = [
    "STATISTICS_MS",
    "STRANDED_S",
    "ClientStatistics",
    "Reach",
    "Stranding",
    "StrandingWatch",
    "bootstrap_answers",
    "close_aside",
    "reach_of",
    "statistics_of",
]

log = logging.getLogger(__name__)

STATISTICS_MS = 5000
"""How often a client reports its statistics, from which the fetcher and the embedded member learn whether it
is connected to a broker or still trying (`reach_of`); `statistics.interval.ms=0` in a client's properties turns
that check off. Each report costs librdkafka a JSON document and Python its parse: every second, about 0.1% of a
core, an eighth of what an idle bridge costs above a plain consumer; every five, a stranded client is still
replaced 10-15 s after its last connection attempt."""

STRANDED_S = 10.0
"""How long a client may go without a broker connection and without a connection attempt before its
owner checks whether a bootstrap server answers, and if one does replaces the client. librdkafka also rests
between attempts while every broker is down (hence the check), and a client replaced while it would still
have reconnected by itself costs only the new connection."""
_REAL_BROKER_SOURCES = frozenset({"configured", "learned"})  # not librdkafka's "internal" and "logical" handles


@dataclass(frozen=True, slots=True)
class Reach:
    """What a client's statistics say of its real brokers (bootstrap servers and learned brokers, not
    librdkafka's internal and logical handles): whether one is connected, and each one's name, state and
    connection attempts so far, whose change shows the client still trying."""

    connected: bool
    attempts: tuple[tuple[str, str, int], ...]


@dataclass(frozen=True, slots=True)
class ClientStatistics:
    """What one librdkafka statistics report says that the bridge acts on, parsed once per report: the client's
    `Reach` (None when it names no brokers) and whether its group coordinator is up (None when it names no
    group: not a group member's report)."""

    reach: Reach | None
    coordinator_up: bool | None


def statistics_of(statistics: str) -> ClientStatistics:
    """The `ClientStatistics` in a librdkafka statistics JSON (nothing known from one that does not parse)."""
    try:
        parsed = json.loads(statistics)
    except ValueError:
        return ClientStatistics(None, None)
    if not isinstance(parsed, dict):
        return ClientStatistics(None, None)
    reach = _reach_in(parsed)
    return ClientStatistics(reach, _coordinator_up(parsed.get("cgrp")))


def reach_of(statistics: str) -> Reach | None:
    """The `Reach` in a librdkafka statistics JSON; None when it names no brokers.

    A client that is not connected and stops trying is in a dead end: when a Metadata answer lists no broker
    (a restarted broker answers so until its controller has sent it the cluster's metadata), librdkafka drops
    every broker not in it, bootstrap servers included. A dropped broker may stay listed for good, in INIT,
    held by a reference, but is never connected again. With no broker to ask, the client sends nothing, so
    neither its re-bootstrap on "all brokers down" (no broker goes down any more) nor its re-bootstrap timer
    (armed by a metadata request) fires: no fetch error, no record, for good."""
    return statistics_of(statistics).reach


def _reach_in(parsed: dict[str, Any]) -> Reach | None:
    brokers = parsed.get("brokers")
    if not isinstance(brokers, dict):
        return None
    real = [b for b in brokers.values() if isinstance(b, dict) and b.get("source") in _REAL_BROKER_SOURCES]
    attempts = tuple(sorted((str(b.get("name")), str(b.get("state")), int(b.get("connects") or 0)) for b in real))
    return Reach(any(b.get("state") == "UP" for b in real), attempts)


def _coordinator_up(group: object) -> bool | None:
    """The group's state alone: librdkafka leaves `up` the moment its coordinator connection drops, and that
    connection is its logical coordinator handle, which `Reach` leaves out, so a group `up` while its client's
    real brokers are still reconnecting (as just after a broker's return) has its coordinator."""
    if not isinstance(group, dict):
        return None
    return group.get("state") == "up"


@dataclass(frozen=True, slots=True)
class Stranding:
    """Since when (monotonic) a client has been neither connected nor trying, and the attempts seen then."""

    since: float | None = None
    attempts: tuple[tuple[str, str, int], ...] = ()

    def observe(self, reach: Reach | None, now: float) -> Stranding:
        if reach is None:
            return self
        if reach.connected:
            return Stranding(None, reach.attempts)
        if self.since is None or reach.attempts != self.attempts:
            return Stranding(now, reach.attempts)  # not connected, but (still) trying: the clock starts again
        return self

    def stranded(self, now: float, grace_s: float = STRANDED_S) -> bool:
        """Neither connected nor trying for `grace_s`: replace the client."""
        return self.since is not None and now - self.since >= grace_s


def bootstrap_answers(bootstrap_servers: str, timeout_s: float = 1.0) -> bool:
    """Whether one of the bootstrap servers accepts a TCP connection: a client that has stopped trying while a
    broker answers is stranded, one that rests while every broker is down is merely waiting."""
    for address in bootstrap_servers.split(","):
        host, _, port = address.strip().rpartition("//")[2].rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
                return True
        except (OSError, ValueError):
            continue
    return False


def close_aside(client: Any, thread_name: str) -> None:
    """Close a client nothing needs any more (a replaced, stranded one; a never-started member's) on a thread of
    its own: closing a client without a broker waits for its timeouts."""

    def close() -> None:
        try:
            client.close()
        except Exception:  # whatever a stranded client's close raises, nothing depends on it
            log.debug("closing a replaced Kafka client failed", exc_info=True)

    threading.Thread(target=close, name=thread_name, daemon=True).start()


class StrandingWatch:
    """One owner's watch over its current client: which client is current (statistics a replaced one reports
    late are ignored) and whether it is due for replacement. Changed on the owner's polling thread only."""

    def __init__(self, bootstrap_servers: str) -> None:
        self._bootstrap_servers = bootstrap_servers
        self._client = 0
        self._stranding = Stranding()

    def new_client(self) -> int:
        """The number of the client about to be made; its clock starts afresh."""
        self._client += 1
        self._stranding = Stranding()
        return self._client

    def is_current(self, client: int) -> bool:
        return client == self._client

    def observe(self, client: int, reach: Reach | None) -> None:
        """`reach`, from the statistics client number `client` reported."""
        if self.is_current(client):
            self._stranding = self._stranding.observe(reach, time.monotonic())

    def reset(self) -> None:
        """Forget what was seen: the client need not be connected now (e.g. it has nothing to fetch)."""
        self._stranding = Stranding()

    def stranded_for(self) -> float:
        since = self._stranding.since
        return 0.0 if since is None else time.monotonic() - since

    def replace_due(self) -> bool:
        """Stranded for `STRANDED_S` while a bootstrap server answers. While none answers, every broker is down:
        librdkafka's own retries are what is needed, not a new client, and the clock starts again."""
        if not self._stranding.stranded(time.monotonic()):
            return False
        if bootstrap_answers(self._bootstrap_servers):
            return True
        self._stranding = Stranding()
        return False
