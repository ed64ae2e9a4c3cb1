"""Whether the fetcher can read the partitions it was given: a `FetchHealth` decided from librdkafka's error
codes (never from message text), and a tracker that says when the picture changes, so that a bridge that
owns partitions it cannot fetch says so loudly, once per change, instead of keeping them silently.

Also whether a client may be stranded: not connected to any broker and not trying to, which after a dead end
librdkafka never leaves by itself (see `reach_of`); the fetcher and the embedded member replace such a client
once it has lasted `STRANDED_S` while a bootstrap server answers.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError

from migrator.protocol.fetch import FetchHealth, FetchState
from migrator.protocol.partition import TopicPartition

__all__ = [
    "STATISTICS_MS",
    "STRANDED_S",
    "FetchHealth",
    "FetchHealthTracker",
    "FetchState",
    "Reach",
    "Stranding",
    "bootstrap_answers",
    "close_aside",
    "health_of",
    "leaderless",
    "reach_of",
]

log = logging.getLogger(__name__)

STATISTICS_MS = 5000
"""How often a client reports its statistics, from which the fetcher and the embedded member learn whether it
is connected to a broker or still trying (`reach_of`); `statistics.interval.ms=0` in a client's properties turns
that check off. Each report costs librdkafka a JSON document and Python its parse: every second, about 0.1% of a
core, an eighth of what an idle bridge costs above a plain consumer; every five, a stranded client is still
replaced 10-15 s after its last connection attempt."""

STRANDED_S = 10.0
"""How long a fetching client may go without a broker connection and without a connection attempt before the
fetcher checks whether a bootstrap server answers, and if one does replaces the client. librdkafka also rests
between attempts while every broker is down (hence the check), and a client replaced while it would still
have reconnected by itself costs only the new connection."""
_REAL_BROKER_SOURCES = frozenset({"configured", "learned"})  # not librdkafka's "internal" and "logical" handles


_BY_CODE: Mapping[int, FetchHealth] = {
    **dict.fromkeys(
        (
            KafkaError.TOPIC_AUTHORIZATION_FAILED,
            KafkaError.GROUP_AUTHORIZATION_FAILED,
            KafkaError.CLUSTER_AUTHORIZATION_FAILED,
            KafkaError.SASL_AUTHENTICATION_FAILED,
            KafkaError._AUTHENTICATION,
            KafkaError._SSL,
        ),
        FetchHealth.DENIED,
    ),
    **dict.fromkeys(
        (
            KafkaError._TRANSPORT,
            KafkaError._ALL_BROKERS_DOWN,
            KafkaError._TIMED_OUT,
            KafkaError._RESOLVE,
            KafkaError.LEADER_NOT_AVAILABLE,
            KafkaError.NOT_LEADER_FOR_PARTITION,
            KafkaError.BROKER_NOT_AVAILABLE,
            KafkaError.REQUEST_TIMED_OUT,
            KafkaError.NETWORK_EXCEPTION,
        ),
        FetchHealth.UNREACHABLE,
    ),
}
_RANK = {FetchHealth.OK: 0, FetchHealth.FAILING: 1, FetchHealth.UNREACHABLE: 2, FetchHealth.DENIED: 3}


def health_of(code: int) -> FetchHealth:
    return _BY_CODE.get(code, FetchHealth.FAILING)


def leaderless(
    leaders: Mapping[TopicPartition, int], owned: Collection[TopicPartition]
) -> dict[TopicPartition | None, FetchHealth]:
    """The owned partitions whose metadata names no leader (-1), as unreachable fetch failures."""
    return {tp: FetchHealth.UNREACHABLE for tp in owned if leaders.get(tp, 0) < 0}


class FetchHealthTracker:
    """Per owned partition, whether its last fetch outcome was an error; `observe` returns the new
    `FetchState` when it differs from the last one (else None). Not thread-safe: the fetcher calls it under
    its poll lock."""

    def __init__(self) -> None:
        self._failing: dict[TopicPartition, FetchHealth] = {}
        self.state = FetchState()

    @property
    def failing(self) -> bool:
        return bool(self._failing)

    def observe(
        self,
        failures: Mapping[TopicPartition | None, FetchHealth],
        fetched: Iterable[TopicPartition],
        owned: Collection[TopicPartition],
    ) -> FetchState | None:
        """`failures`: the error of each partition in this batch (key None: a client-wide error, which counts
        for every owned partition); `fetched`: partitions that returned records (recovered)."""
        for tp in fetched:
            self._failing.pop(tp, None)
        for key, health in failures.items():
            targets: Iterable[TopicPartition] = owned if key is None else (key,)
            for target in targets:
                if _RANK[health] >= _RANK[self._failing.get(target, FetchHealth.OK)]:
                    self._failing[target] = health
        self._failing = {tp: h for tp, h in self._failing.items() if tp in owned}
        worst = max(self._failing.values(), key=_RANK.__getitem__, default=FetchHealth.OK)
        state = FetchState(worst, tuple(sorted(self._failing)))
        if state == self.state:
            return None
        self.state = state
        return state


@dataclass(frozen=True, slots=True)
class Reach:
    """What a client's statistics say of its real brokers (bootstrap servers and learned brokers, not
    librdkafka's internal and logical handles): whether one is connected, and each one's name, state and
    connection attempts so far, whose change shows the client still trying."""

    connected: bool
    attempts: tuple[tuple[str, str, int], ...]


def reach_of(statistics: str) -> Reach | None:
    """The `Reach` in a librdkafka statistics JSON; None when it names no brokers.

    A client that is not connected and stops trying is in a dead end: when a Metadata answer lists no broker
    (a restarted broker answers so until its controller has sent it the cluster's metadata), librdkafka drops
    every broker not in it, bootstrap servers included. A dropped broker may stay listed for good, in INIT,
    held by a reference, but is never connected again. With no broker to ask, the client sends nothing, so
    neither its re-bootstrap on "all brokers down" (no broker goes down any more) nor its re-bootstrap timer
    (armed by a metadata request) fires: no fetch error, no record, for good."""
    try:
        brokers = json.loads(statistics).get("brokers")
    except (ValueError, AttributeError):
        return None
    if not isinstance(brokers, dict):
        return None
    real = [b for b in brokers.values() if isinstance(b, dict) and b.get("source") in _REAL_BROKER_SOURCES]
    attempts = tuple(sorted((str(b.get("name")), str(b.get("state")), int(b.get("connects") or 0)) for b in real))
    return Reach(any(b.get("state") == "UP" for b in real), attempts)


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
    """Close a replaced, stranded client on a thread of its own: closing a client without a broker waits for its
    timeouts, and nothing of it is needed any more."""

    def close() -> None:
        try:
            client.close()
        except Exception:  # whatever a stranded client's close raises, nothing depends on it
            log.debug("closing a replaced Kafka client failed", exc_info=True)

    threading.Thread(target=close, name=thread_name, daemon=True).start()
