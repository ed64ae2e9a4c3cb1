"""Whether the fetcher can read the partitions it was given: a `FetchHealth` decided from librdkafka's error
codes (never from message text), and a tracker that says when the picture changes, so that a bridge that
owns partitions it cannot fetch says so loudly, once per change, instead of keeping them silently.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from confluent_kafka import KafkaError

from migrator.protocol.fetch import FetchHealth, FetchState
from migrator.protocol.partition import TopicPartition

__all__ = ["FetchHealth", "FetchHealthTracker", "FetchState", "health_of", "leaderless"]


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
