"""ABANDONED in the fleet scan: the lifecycle rule over the tree's offset mtimes and Kafka's side."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from migrator.fleet.classify import abandoned, may_be_abandoned
from migrator.fleet.model import FleetRow, KafkaGroupFacts, Status
from migrator.fleet.readiness import EnsembleUse, Stage, Step, readiness
from migrator.protocol.group_view import GroupView
from migrator.protocol.kafka import KafkaGroup, KafkaGroupState, KafkaMember
from migrator.protocol.lifecycle import GroupTree, NodeAcl, NodeStat, TreeNode
from migrator.protocol.partition import TopicPartition as TP

DAY_MS = 86_400_000
NOW = 100 * DAY_MS
LIMIT_MS = 30 * DAY_MS
ANYONE = (NodeAcl(31, "world", "anyone"),)


def node(path: str, data: bytes = b"", mtime: int = 0) -> TreeNode:
    return TreeNode(path, data, ANYONE, NodeStat(1, 1, 1, mtime, mtime, 0, 0, 0, 0, len(data), 0))


def tree(commit_ms: int) -> GroupTree:
    nodes = [node(""), node("ids"), node("offsets"), node("offsets/t"), node("offsets/t/0", b"5", commit_ms)]
    return GroupTree("g", tuple(nodes))


def kafka(state=KafkaGroupState.DEAD, members=(), committed=None) -> KafkaGroupFacts:
    return KafkaGroupFacts(KafkaGroup("g", state, "", tuple(members)), committed=committed or {})


VIEW = GroupView("g", offsets={TP("t", 0): 5})


def test_a_group_nobody_used_for_longer_than_the_limit_is_abandoned():
    found = abandoned(VIEW, tree(NOW - 40 * DAY_MS), kafka(), NOW, LIMIT_MS)
    assert found is not None and found.status is Status.ABANDONED
    assert found.reasons == ("abandoned: no member, no Kafka group, offsets last written 40d ago",)


def test_a_recent_commit_or_a_live_kafka_side_is_not_abandoned():
    assert abandoned(VIEW, tree(NOW - 2 * DAY_MS), kafka(), NOW, LIMIT_MS) is None
    member = KafkaMember("m1", "c1", "/10.0.0.1", None, ())
    assert abandoned(VIEW, tree(NOW - 40 * DAY_MS), kafka(KafkaGroupState.STABLE, (member,)), NOW, LIMIT_MS) is None
    retained = kafka(KafkaGroupState.EMPTY, committed={TP("t", 0): 5})
    assert abandoned(VIEW, tree(NOW - 40 * DAY_MS), retained, NOW, LIMIT_MS) is None


def test_only_orphaned_groups_with_an_answer_from_kafka_are_candidates():
    orphan = FleetRow("zk", "g", Status.ORPHANED.value, [])
    assert may_be_abandoned(orphan, kafka())
    assert not may_be_abandoned(orphan, None)
    assert not may_be_abandoned(orphan, KafkaGroupFacts(group=None, error="down"))
    assert not may_be_abandoned(FleetRow("zk", "g", Status.LEGACY.value, [], members=1), kafka())


def test_an_abandoned_group_counts_as_such_and_is_cleaned_with_abandoned():
    result = readiness("zk:2181", [FleetRow("zk:2181", "old", Status.ABANDONED.value, [])], EnsembleUse())
    assert result.counts[Stage.ABANDONED] == 1
    assert result.blockers[0].step is Step.CLEANUP_ABANDONED
    assert result.blockers[0].command("zk:2181") == "migrator cleanup -z zk:2181 -g old --abandoned --execute"


@given(st.integers(0, 200 * DAY_MS), st.integers(1, 100 * DAY_MS))
def test_abandoned_exactly_when_the_last_commit_is_at_least_the_limit_old(age_ms, limit_ms):
    found = abandoned(VIEW, tree(NOW + 200 * DAY_MS - age_ms), kafka(), NOW + 200 * DAY_MS, limit_ms)
    assert (found is not None) == (age_ms >= limit_ms)
