"""The fleet scan's second look at groups nobody is registered in: ABANDONED (the lifecycle rule over the
tree's offset mtimes and Kafka's side) and CUT_OVER (as `status` decides it); each group's route."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from migrator.fleet.classify import abandoned, cut_over, finished, may_be_abandoned
from migrator.fleet.model import FleetRow, KafkaGroupFacts, Status
from migrator.fleet.readiness import EnsembleUse, Stage, Step, readiness, stage_and_step
from migrator.protocol.acl import Perm
from migrator.protocol.codecs import AuditEntry, ModeNode
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


@given(st.integers(0, 200 * DAY_MS), st.integers(1, 100 * 86_400).map(lambda s: s * 1000))
def test_abandoned_exactly_when_the_last_commit_is_at_least_the_limit_old(age_ms, limit_ms):
    """Limits in whole seconds, as the lifecycle rule takes them."""
    found = abandoned(VIEW, tree(NOW + 200 * DAY_MS - age_ms), kafka(), NOW + 200 * DAY_MS, limit_ms)
    assert (found is not None) == (age_ms >= limit_ms)


# CUT_OVER: as `status` decides it, from the fence on `ids` read in the tree, mode kafka and nobody left in
# ZooKeeper; the cutover's audit entry is kept in the tree as the command writes it.

FENCED = (NodeAcl(int(Perm.READ | Perm.DELETE), "world", "anyone"), NodeAcl(31, "digest", "ops:x"))
CUT_VIEW = GroupView("g", mode=ModeNode(True, "kafka"), offsets={TP("t", 0): 5})


def cut_tree(fenced: bool = True, owner: bool = False) -> GroupTree:
    entry = AuditEntry(1, "ops", "zookeeper", "kafka", "cutover").encode()
    ids = TreeNode("ids", b"", FENCED if fenced else ANYONE, NodeStat(1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0))
    nodes = [node(""), ids, node("migration"), node("migration/mode", b"kafka"), node("migration/audit"),
             node("migration/audit/entry-0000000000", AuditEntry(0, "ops", None, "zookeeper", "x").encode()),
             node("migration/audit/entry-0000000001", entry)]  # fmt: skip
    if owner:
        nodes += [node("owners"), node("owners/t"), node("owners/t/0", b"g_old-0")]
    return GroupTree("g", tuple(nodes))


def test_a_fenced_group_switched_by_cutover_is_cut_over_and_waits_for_its_kafka_consumers():
    waiting = cut_over(CUT_VIEW, cut_tree(), kafka(KafkaGroupState.EMPTY))
    assert waiting is not None and waiting.status is Status.CUT_OVER
    assert waiting.reasons[0].startswith("kafka-consumers-missing")
    member = KafkaMember("m1", "c1", "/10.0.0.1", None, ())
    started = cut_over(CUT_VIEW, cut_tree(), kafka(KafkaGroupState.STABLE, members=(member,)))
    assert started is not None and started.reasons[0].startswith("kafka-consumers-started")
    committed = cut_over(CUT_VIEW, cut_tree(), kafka(KafkaGroupState.EMPTY, committed={TP("t", 0): 9}))
    assert committed is not None and committed.reasons[0].startswith("kafka-consumers-started")
    unchecked = cut_over(CUT_VIEW, cut_tree(), None)
    assert unchecked is not None and unchecked.reasons[0].startswith("kafka-unchecked")


def test_without_the_fence_or_with_someone_left_in_zookeeper_it_is_not_cut_over():
    assert cut_over(CUT_VIEW, cut_tree(fenced=False), kafka()) is None
    assert cut_over(CUT_VIEW, cut_tree(owner=True), kafka()) is None
    assert cut_over(replace(CUT_VIEW, mode=ModeNode(True, "zookeeper")), cut_tree(), kafka()) is None


def test_a_cut_over_group_waits_on_its_consumers_then_is_finished():
    waiting = FleetRow("zk:2181", "g", Status.CUT_OVER.value, [], mode="kafka")
    started = replace(waiting, kafka_members=1)
    assert stage_and_step(waiting) == (Stage.MIGRATING, Step.START_KAFKA_CONSUMERS)
    assert stage_and_step(started) == (Stage.FINISHED, Step.CLEANUP)


def test_each_group_with_members_names_its_route_to_kafka():
    from migrator.fleet.classify import member_route
    from migrator.protocol.codecs import Registration
    from migrator.protocol.group_view import Member

    legacy = Member("g_a", Registration({"t": 1}, timestamp_ms=0), ctime_ms=0, is_bridge=False)
    bridge = Member("g_b", Registration({"t": 1}, timestamp_ms=0), ctime_ms=0, is_bridge=True)
    assert member_route(GroupView("g", members=(legacy,)), None) == "cutover"
    assert member_route(GroupView("g", members=(bridge,), migration_ids=frozenset({"g_b"})), None) == "set-mode"
    assert member_route(GroupView("g", members=(legacy, bridge), migration_ids=frozenset({"g_b"})), None) == "blocked"
    assert member_route(GroupView("g"), None) is None


def test_a_group_nobody_is_in_whose_offsets_kafka_holds_at_or_beyond_is_finished():
    """ZooKeeper holds t-0 at 5 (`tree`, `VIEW`): finished once Kafka's commit is 5 or more, not before."""
    for committed, done in ((None, False), ({TP("t", 0): 4}, False), ({TP("t", 0): 5}, True), ({TP("t", 0): 9}, True)):
        found = finished(VIEW, tree(NOW), kafka(KafkaGroupState.EMPTY, committed=committed))
        assert (found is not None and found.status is Status.KAFKA) == done, committed
