"""A bridge that cannot fetch an owned partition says so once per change: the fetch health is decided from
librdkafka's error codes, never from message text."""

from __future__ import annotations

from confluent_kafka import KafkaError

from migrator.kafka.fetch_health import FetchHealth, FetchHealthTracker, FetchState, health_of, leaderless
from migrator.protocol.partition import TopicPartition

A, B, C = (TopicPartition("orders", p) for p in range(3))


def test_error_codes_are_classes_of_health() -> None:
    assert health_of(KafkaError.TOPIC_AUTHORIZATION_FAILED) is FetchHealth.DENIED
    assert health_of(KafkaError._TRANSPORT) is FetchHealth.UNREACHABLE
    assert health_of(KafkaError.UNKNOWN_TOPIC_OR_PART) is FetchHealth.FAILING


def test_a_change_is_reported_once_and_recovery_clears_it() -> None:
    tracker = FetchHealthTracker()
    owned = {A, B, C}
    denied = FetchState(FetchHealth.DENIED, (A, B))
    assert tracker.observe({A: FetchHealth.DENIED, B: FetchHealth.DENIED}, (), owned) == denied
    assert tracker.observe({A: FetchHealth.DENIED}, (), owned) is None  # the same picture: not again
    assert "denied: 2 owned partition(s) cannot be fetched: orders-0, orders-1" in denied.describe()
    assert tracker.observe({}, (A,), owned) == FetchState(FetchHealth.DENIED, (B,))
    assert tracker.observe({}, (), {A, C}) == FetchState()  # B is no longer owned: nothing is kept silently
    assert not tracker.failing


def test_a_client_wide_error_counts_for_every_owned_partition_and_the_worst_wins() -> None:
    tracker = FetchHealthTracker()
    state = tracker.observe({None: FetchHealth.UNREACHABLE, C: FetchHealth.DENIED}, (), {A, C})
    assert state == FetchState(FetchHealth.DENIED, (A, C))


def test_an_owned_partition_without_a_leader_is_unreachable() -> None:
    a, b, c = (TopicPartition("t", p) for p in range(3))
    leaders = {a: -1, b: 1, c: -1}
    assert leaderless(leaders, [a, b]) == {a: FetchHealth.UNREACHABLE}
    assert leaderless({}, [a]) == {}  # not in the metadata: not judged here
