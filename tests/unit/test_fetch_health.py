"""A bridge that cannot fetch an owned partition says so once per change: the fetch health is decided from
librdkafka's error codes, never from message text."""

from __future__ import annotations

import json

from confluent_kafka import KafkaError

from migrator.kafka.fetch_health import (
    STRANDED_S,
    FetchHealth,
    FetchHealthTracker,
    FetchState,
    brokerless_since,
    brokers_usable,
    health_of,
    leaderless,
    stranded,
)
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


def _statistics(*brokers: tuple[str, str]) -> str:
    return json.dumps({"brokers": {f"b{i}": {"source": src, "state": st} for i, (src, st) in enumerate(brokers)}})


def test_only_bootstrap_and_learned_brokers_not_at_rest_count_as_usable() -> None:
    up, connecting = ("learned", "UP"), ("configured", "TRY_CONNECT")
    assert brokers_usable(_statistics(up, connecting, ("logical", "UP"), ("internal", "UP"))) == 2
    assert brokers_usable(_statistics(("learned", "DOWN"))) == 1  # unreachable, but the client keeps trying
    assert brokers_usable(_statistics(("logical", "UP"))) == 0  # the dead end: a group coordinator handle only
    assert brokers_usable(_statistics(("learned", "INIT"), ("logical", "INIT"))) == 0  # a dropped broker lingers
    assert brokers_usable(_statistics()) == 0
    assert brokers_usable("{not json") is None
    assert brokers_usable(json.dumps({"name": "rdkafka#consumer-1"})) is None


def test_a_client_is_stranded_only_after_knowing_no_broker_for_the_whole_grace() -> None:
    since = brokerless_since(None, 0, now=100.0)
    assert since == 100.0
    since = brokerless_since(since, 0, now=105.0)
    assert since == 100.0  # the first moment is kept
    assert not stranded(since, now=105.0, grace_s=10.0)
    assert stranded(brokerless_since(since, None, now=110.0), now=110.0, grace_s=10.0)  # no news is no change
    assert brokerless_since(since, 1, now=110.0) is None  # a broker again: the clock restarts
    assert not stranded(None, now=1e9)
    assert STRANDED_S > 1.0
