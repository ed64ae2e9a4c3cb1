"""Whether the fetcher can read the partitions it was given: a `FetchHealth` decided from librdkafka's error
codes (never from message text), and a tracker that says when the picture changes, so that a bridge that
owns partitions it cannot fetch says so loudly, once per change, instead of keeping them silently.

Also whether the fetcher's client is stranded: it has no broker left to connect to, a state librdkafka never
leaves by itself (see `brokers_usable`), so the fetcher replaces the client once it has lasted `STRANDED_S`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping

from confluent_kafka import KafkaError

from migrator.protocol.fetch import FetchHealth, FetchState
from migrator.protocol.partition import TopicPartition

__all__ = [
    "FetchHealth",
    "FetchHealthTracker",
    "FetchState",
    "brokerless_since",
    "brokers_usable",
    "health_of",
    "leaderless",
    "stranded",
]

STRANDED_S = 10.0
"""How long a client that fetches may have no usable broker before it is replaced. librdkafka leaves that state,
when it leaves it at all, within milliseconds (a re-bootstrap adds the bootstrap servers at once, and a broker
it needs moves on from INIT to connecting)."""
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


def brokers_usable(statistics: str) -> int | None:
    """How many real brokers (bootstrap servers or brokers learned from metadata) a librdkafka client can still
    connect to, from its statistics JSON: those in any state but INIT; None when the JSON names no brokers.

    Zero is a dead end: when a Metadata answer lists no broker (a restarted broker answers so until the
    controller has sent it the cluster's metadata), librdkafka drops every broker not in it, bootstrap servers
    included. A dropped broker may stay listed for good, in INIT, held by a reference, but is never connected
    again. With no usable broker the client sends no request, so neither its re-bootstrap on "all brokers
    down" (no broker goes down any more) nor its re-bootstrap timer (armed by a metadata request) fires: no
    fetch error, no record, for good. A usable broker the client needs never rests in INIT: it is connected,
    or it cycles through connecting and down while unreachable."""
    try:
        brokers = json.loads(statistics).get("brokers")
    except (ValueError, AttributeError):
        return None
    if not isinstance(brokers, dict):
        return None
    return sum(
        1
        for b in brokers.values()
        if isinstance(b, dict) and b.get("source") in _REAL_BROKER_SOURCES and b.get("state") != "INIT"
    )


def brokerless_since(since: float | None, usable: int | None, now: float) -> float | None:
    """Since when the client has had no usable broker (`since` carried over), or None while it has one."""
    if usable is None:
        return since
    if usable:
        return None
    return now if since is None else since


def stranded(since: float | None, now: float, grace_s: float = STRANDED_S) -> bool:
    """The client has had no usable broker for `grace_s`: replace it."""
    return since is not None and now - since >= grace_s
