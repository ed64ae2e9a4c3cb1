"""The read model of a group: each derived fact pinned once, at the edges where the membership sets differ."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from migrator.errors import CorruptNodeError
from migrator.ops.groups import GroupState, group_row
from migrator.protocol.codecs import PATTERN_STATIC, ModeNode, Registration
from migrator.protocol.dialect import Dialect, OwnerNodeName, member_dialect, owner_node_dialect
from migrator.protocol.group import Group, partition_lag
from migrator.protocol.group_view import CorruptMember, GroupView, Member
from migrator.protocol.kafka import KafkaGroup, KafkaGroupState, KafkaMember
from migrator.protocol.partition import TopicPartition as TP
from migrator.protocol.pykafka_layout import Spelling

REG = Registration({"t": 1}, timestamp_ms=1)


def kafka(*client_ids: str, state: KafkaGroupState = KafkaGroupState.STABLE) -> KafkaGroup:
    members = tuple(KafkaMember(f"{c}-{i}", c, "/127.0.0.1", None, ()) for i, c in enumerate(client_ids))
    return KafkaGroup("g", state, "range", members)


def zk(
    bridges: tuple[str, ...] = (),
    legacy: tuple[str, ...] = (),
    only_migration: tuple[str, ...] = (),
    corrupt: tuple[str, ...] = (),
) -> GroupView:
    members = tuple(Member(c, REG, 0, True) for c in bridges) + tuple(Member(c, REG, 0, False) for c in legacy)
    return GroupView(
        "g",
        members=members,
        corrupt_members=tuple(CorruptMember(c, "not JSON") for c in corrupt),
        migration_ids=frozenset(bridges + only_migration),
        mode=ModeNode.decode(b"kafka"),
    )


def client_ids(members: tuple[KafkaMember, ...]) -> list[str]:
    return [m.client_id for m in members]


def test_membership_sets() -> None:
    group = Group(zk(bridges=("b1", "b2"), legacy=("l1",), only_migration=("b3",), corrupt=("x",)))
    assert group.registered == {"b1", "b2", "l1", "x"}
    assert group.announced_bridges == {"b1", "b2", "b3"}
    assert group.registered_bridges == {"b1", "b2"}
    assert [m.consumer_id for m in group.legacy_members] == ["l1"]
    assert group.undecodable == {"x"}
    assert not group.only_bridges
    assert Group(zk(bridges=("b1",))).only_bridges
    assert not Group(zk()).only_bridges
    assert group.mode_is_kafka and not Group(GroupView("g")).mode_is_kafka
    assert Group(zk(bridges=("b1",)), kafka("b1", "p")).in_kafka == {"b1", "p"}


def test_a_bridge_registered_in_one_set_only() -> None:
    """b2 is announced under migration/ids but not registered under ids (registering, or leaving): its embedded
    member is no plain consumer, but ZooKeeper's assignment does not count it, so the guard must."""
    group = Group(zk(bridges=("b1",), only_migration=("b2",)), kafka("b1", "b2"))
    assert group.plain_consumers == ()
    assert client_ids(group.outside_zookeeper) == ["b2"]
    assert group.bridges_joining_zookeeper == {"b2"}
    assert group.bridges_joining_kafka == frozenset()


def test_a_legacy_consumer_id_in_the_kafka_group_is_a_plain_consumer() -> None:
    """A legacy connector never joins the Kafka group: a Kafka member with its id is someone else."""
    group = Group(zk(bridges=("b1",), legacy=("x",)), kafka("b1", "x"))
    assert client_ids(group.plain_consumers) == ["x"]
    assert client_ids(group.outside_zookeeper) == ["x"]


def test_plain_consumers_count_each_member_in_group_order() -> None:
    group = Group(zk(bridges=("b1",)), kafka("rdkafka", "b1", "rdkafka", "java"))
    assert [m.member_id for m in group.plain_consumers] == ["rdkafka-0", "rdkafka-2", "java-3"]
    assert group.kafka_members_needed == 4


def test_registered_bridges_missing_from_kafka_are_joining_kafka() -> None:
    group = Group(zk(bridges=("b1", "b2")), kafka("b1"))
    assert group.bridges_joining_kafka == {"b2"}
    assert Group(zk(bridges=("b1",))).bridges_joining_kafka == frozenset()  # not described: ask kafka_known
    assert not Group(zk(bridges=("b1",))).kafka_known


def test_stable_and_rebalancing() -> None:
    assert Group(zk(), kafka("b1")).stable
    assert not Group(zk()).stable
    rebalancing = Group(zk(), kafka("b1", state=KafkaGroupState.PREPARING_REBALANCE))
    assert rebalancing.rebalancing and not rebalancing.stable


def test_state_is_mapped_once_from_either_spelling() -> None:
    assert KafkaGroupState.from_name("PREPARING_REBALANCING") is KafkaGroupState.PREPARING_REBALANCE
    assert KafkaGroupState.from_name("CompletingRebalance") is KafkaGroupState.COMPLETING_REBALANCE
    assert KafkaGroupState.from_name("STABLE") is KafkaGroupState.STABLE
    assert KafkaGroupState.from_name("Empty") is KafkaGroupState.EMPTY
    assert KafkaGroupState.from_name("whatever") is KafkaGroupState.UNKNOWN
    assert {s for s in KafkaGroupState if s.rebalancing} == {
        KafkaGroupState.PREPARING_REBALANCE,
        KafkaGroupState.COMPLETING_REBALANCE,
    }


def test_lag_resumes_from_the_larger_commit_and_is_none_without_one() -> None:
    t0, t1, t2 = TP("t", 0), TP("t", 1), TP("t", 2)
    view = GroupView("g", offsets={t0: 4, t1: 9})
    group = Group(view, kafka(), kafka_committed={t0: 6, t1: -1}, log_end={t0: 10, t1: 8, t2: 5})
    assert group.partition_lag(t0) == 4  # max(4, 6)
    assert group.partition_lag(t1) == 0  # ZooKeeper's commit beyond the end: no negative lag
    assert group.partition_lag(t2) is None  # nothing committed
    assert group.lag == 4
    assert Group(GroupView("g"), log_end={t2: 5}).lag is None
    assert partition_lag(None, 3, 4) is None


def test_members_carry_their_dialect() -> None:
    view = GroupView("g", members=(Member("a", REG, 0, False), Member("p", REG, 0, False, Dialect.PYKAFKA)))
    assert Group(view).dialects == {Dialect.SCALA, Dialect.PYKAFKA}
    assert Dialect.SCALA.codec.owner_node("t", "3") == OwnerNodeName(TP("t", 3))
    assert Dialect.SCALA.codec.owner_node("t", "1-3") is None
    assert owner_node_dialect("t", "1-3") == (Dialect.PYKAFKA, OwnerNodeName(TP("t", 3), Spelling.PYTHON2, 1))
    assert owner_node_dialect("b't'", "3") is None  # a partition id under a Python 3 pykafka folder: no dialect's
    assert member_dialect(REG.encode()) == (REG, Dialect.SCALA)
    assert member_dialect(b"topic-name") == (Registration({"topic-name": 1}, PATTERN_STATIC, 0), Dialect.PYKAFKA)
    with pytest.raises(CorruptNodeError):
        member_dialect(b"{not json")  # neither dialect's


ids = st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=4).map(tuple)


@given(bridges=ids, legacy=ids, announced=ids, clients=ids)
def test_the_membership_facts_partition_the_kafka_group(bridges, legacy, announced, clients) -> None:
    legacy = tuple(sorted(set(legacy) - set(bridges)))
    announced = tuple(sorted(set(announced) - set(legacy)))  # the reader marks every announced member a bridge
    group = Group(zk(bridges=tuple(set(bridges)), legacy=legacy, only_migration=announced), kafka(*clients))
    plain = set(client_ids(group.plain_consumers))
    outside = set(client_ids(group.outside_zookeeper))
    assert plain <= outside
    assert outside - plain == group.bridges_joining_zookeeper
    assert not plain & group.announced_bridges
    assert group.bridges_joining_kafka | (group.registered_bridges & set(clients)) == group.registered_bridges


def test_the_groups_row_counts_the_read_models_facts() -> None:
    """`migrator groups` counts bridges and legacy members as the read model defines them: a bridge announced
    under migration/ids but not (yet) registered under ids is neither, so the row says LEGACY, not MIXED."""
    row = group_row(zk(legacy=("l1",), only_migration=("b2",)), kafka("b2"))
    assert (row.state, row.legacy, row.bridges, row.kafka_members) == (GroupState.LEGACY, 1, 0, 1)
    row = group_row(zk(bridges=("b1",), legacy=("l1",)), None)
    assert (row.state, row.legacy, row.bridges, row.kafka_state) == (GroupState.MIXED, 1, 1, None)
    assert group_row(GroupView("g"), kafka("p")).state is GroupState.KAFKA
    assert group_row(GroupView("g"), None).state is GroupState.INACTIVE
