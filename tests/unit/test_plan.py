"""Rebalance planning: targets under each authority and the release/claim diff."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from migrator.coordination.offsets import merge_fetched, zookeeper_writes
from migrator.coordination.plan import kafka_target, transition, zookeeper_target
from migrator.protocol.partition import TopicPartition as TP


def test_zookeeper_target_is_this_members_share_of_range() -> None:
    subs = {"g_a": {"t": 2}, "g_b": {"t": 2}}
    target = zookeeper_target("g_a", subs, {"t": range(8)}, "range")
    assert target.own == {TP("t", 0): "g_a-0", TP("t", 1): "g_a-0", TP("t", 2): "g_a-1", TP("t", 3): "g_a-1"}
    assert len(target.global_) == 8


def test_kafka_target_subdivides_and_shows_plain_consumers_as_member_0() -> None:
    subs = {"g_a": {"t": 2}}
    members = {"g_a": (TP("t", 0), TP("t", 1)), "plain-member-1": (TP("t", 2),)}
    target = kafka_target("g_a", subs, (TP("t", 0), TP("t", 1)), members)
    assert target.own == {TP("t", 0): "g_a-0", TP("t", 1): "g_a-1"}
    assert target.global_[TP("t", 2)] == "plain-member-1-0"


def test_transition_keeps_partitions_that_stay_on_their_thread() -> None:
    current = {TP("t", 0): "a-0", TP("t", 1): "a-0", TP("t", 2): "a-1"}
    target = {TP("t", 0): "a-0", TP("t", 1): "a-1", TP("t", 3): "a-1"}
    plan = transition(current, target)
    assert plan.release == {TP("t", 1): "a-0", TP("t", 2): "a-1"}
    assert plan.claim == {TP("t", 1): "a-1", TP("t", 3): "a-1"}
    assert plan.moves == {TP("t", 1): "a-1"}  # stays with this member: handed to thread 1 in place
    assert plan.leaving == {TP("t", 2): "a-1"}
    assert plan.arriving == {TP("t", 3): "a-1"}


owner_maps = st.dictionaries(st.builds(TP, st.just("t"), st.integers(0, 9)), st.sampled_from(["a-0", "a-1"]))


@given(current=owner_maps, target=owner_maps)
def test_applying_a_transition_reaches_the_target(current, target) -> None:
    plan = transition(current, target)
    after = {tp: th for tp, th in current.items() if tp not in plan.release}
    assert not set(after) & set(plan.claim)  # never claim what we still hold
    after.update(plan.claim)
    assert after == target


def test_fetch_takes_the_max_and_minus_one_when_missing() -> None:
    zk = {TP("t", 0): 10, TP("t", 1): -1, TP("t", 2): 7}
    kafka = {TP("t", 0): 12, TP("t", 1): -1, TP("t", 2): 3}
    assert merge_fetched(zk, kafka, True, True) == {TP("t", 0): 12, TP("t", 1): -1, TP("t", 2): 7}
    assert merge_fetched(zk, kafka, True, False) == zk
    assert merge_fetched(zk, kafka, False, True) == kafka


@given(
    todo=st.dictionaries(st.integers(0, 7).map(lambda p: TP("t", p)), st.integers(0, 10**6), max_size=8),
    accepted_ps=st.sets(st.integers(0, 7)),
    releasing=st.booleans(),
)
def test_zookeeper_gets_what_kafka_accepted_and_a_release_everything(
    todo: dict[TP, int], accepted_ps: set[int], releasing: bool
) -> None:
    """A release's next owner reads max(ZooKeeper, Kafka): every released position reaches ZooKeeper, the
    ones Kafka refused included; outside a release only what Kafka accepted (CONTRACT §4)."""
    accepted = {TP("t", p) for p in accepted_ps}
    written = zookeeper_writes(todo, accepted, releasing=releasing)
    if releasing:
        assert written == todo
    else:
        assert written == {tp: o for tp, o in todo.items() if tp in accepted}


@given(current=owner_maps, target=owner_maps)
def test_leaving_moves_and_arriving_partition_the_changes(current, target) -> None:
    """The worker releases `leaving`, moves `moves` in place and claims `arriving`: together exactly the
    transition, each partition in one of them, and in-place moves only between threads of this member."""
    plan = transition(current, target)
    assert set(plan.leaving) | set(plan.moves) == set(plan.release)
    assert set(plan.arriving) | set(plan.moves) == set(plan.claim)
    assert not set(plan.leaving) & set(plan.moves) and not set(plan.arriving) & set(plan.moves)
    after = {tp: th for tp, th in current.items() if tp not in plan.leaving}
    after.update(plan.moves)
    after.update(plan.arriving)
    assert after == target
