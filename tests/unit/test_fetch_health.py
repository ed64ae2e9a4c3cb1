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
    Reach,
    Stranding,
    health_of,
    leaderless,
    reach_of,
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


def _statistics(*brokers: tuple[str, str, int]) -> str:
    described = {f"b{i}": {"name": f"b{i}", "source": src, "state": st, "connects": n}
                 for i, (src, st, n) in enumerate(brokers)}  # fmt: skip
    return json.dumps({"brokers": described})


def test_reach_counts_only_bootstrap_and_learned_brokers() -> None:
    reach = reach_of(_statistics(("learned", "INIT", 3), ("logical", "UP", 1), ("internal", "UP", 0)))
    assert reach == Reach(False, (("b0", "INIT", 3),))  # a group coordinator handle connects nothing to fetch
    assert reach_of(_statistics(("configured", "TRY_CONNECT", 0), ("learned", "UP", 1))) == Reach(
        True, (("b0", "TRY_CONNECT", 0), ("b1", "UP", 1))
    )
    assert reach_of(_statistics(("learned", "UP", 1))) == Reach(True, (("b0", "UP", 1),))
    assert reach_of(_statistics()) == Reach(False, ())
    assert reach_of("{not json") is None
    assert reach_of(json.dumps({"name": "rdkafka#consumer-1"})) is None


def test_a_client_is_stranded_only_when_neither_connected_nor_trying_for_the_whole_grace() -> None:
    dropped = Reach(False, (("b1", "INIT", 4),))  # a dropped broker left in INIT: never tried again
    s = Stranding().observe(dropped, now=100.0)
    s = s.observe(dropped, now=110.0)
    assert s.since == 100.0 and not s.stranded(now=110.0, grace_s=20.0)
    assert s.observe(None, now=120.0).stranded(now=120.0, grace_s=20.0)  # no statistics is no change
    assert Stranding().observe(Reach(False, ()), now=0.0).stranded(now=20.0, grace_s=20.0)  # no broker at all


def test_an_unreachable_broker_that_is_retried_or_a_connected_one_restarts_the_clock() -> None:
    s = Stranding().observe(Reach(False, (("boot", "TRY_CONNECT", 1),)), now=100.0)
    s = s.observe(Reach(False, (("boot", "INIT", 2),)), now=115.0)  # another attempt since
    assert s.since == 115.0 and not s.stranded(now=130.0, grace_s=20.0)
    s = s.observe(Reach(True, (("b1", "UP", 1),)), now=131.0)
    assert s.since is None and not s.stranded(now=1e9)
    assert STRANDED_S >= 10.0
