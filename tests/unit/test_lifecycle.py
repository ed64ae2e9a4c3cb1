"""When a group's legacy tree may go (finished, abandoned) and who may delete it, over hand-built trees."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from migrator.protocol.acl import Perm
from migrator.protocol.codecs import Registration
from migrator.protocol.group_view import GroupView, Member
from migrator.protocol.kafka import KafkaGroup, KafkaGroupState, KafkaMember
from migrator.protocol.lifecycle import (
    BlockerKind,
    GroupFacts,
    GroupTree,
    NodeAcl,
    NodeStat,
    Rule,
    TreeNode,
    abandoned_blockers,
    cleanup_blockers,
    finished_blockers,
    lacking,
    last_commit_ms,
    refusal,
)
from migrator.protocol.partition import TopicPartition as TP
from migrator.zk.archive import transactions

DAY_MS = 86_400_000
NOW = 100 * DAY_MS
WORLD_ALL = (NodeAcl(int(Perm.READ | Perm.WRITE | Perm.CREATE | Perm.DELETE | Perm.ADMIN), "world", "anyone"),)
ADMIN = ("digest", "ops:hash=")


def node(path: str, data: bytes = b"", mtime: int = NOW - 40 * DAY_MS, ephemeral: int = 0, acls=WORLD_ALL) -> TreeNode:
    stat = NodeStat(1, 1, 1, mtime, mtime, 0, 0, 0, ephemeral, len(data), 0)
    return TreeNode(path, data, acls, stat)


def finished_tree(offsets: dict[int, int] | None = None, mtime: int = NOW - 40 * DAY_MS) -> GroupTree:
    offsets = {0: 5, 1: 7} if offsets is None else offsets
    nodes = [node(""), node("ids"), node("owners"), node("offsets"), node("offsets/t"), node("migration"),
             node("migration/ids"), node("migration/mode", b"kafka")]  # fmt: skip
    nodes += [node(f"offsets/t/{p}", str(o).encode(), mtime=mtime) for p, o in offsets.items()]
    return GroupTree("g", tuple(nodes))


def facts(tree: GroupTree | None = None, committed=None, kafka_members=(), state=KafkaGroupState.EMPTY, **view):
    tree = tree or finished_tree()
    offsets = {TP("t", int(n.parts[2])): int(n.data) for n in tree.at_depth("offsets", 3)}
    committed = {TP("t", 0): 5, TP("t", 1): 9} if committed is None else committed
    kafka = KafkaGroup("g", state, "range", tuple(kafka_members))
    return GroupFacts(GroupView("g", offsets=offsets, **view), tree, kafka, committed)


def kinds(blockers) -> list[BlockerKind]:
    return [b.kind for b in blockers]


def test_a_group_left_to_plain_consumers_with_its_offsets_in_kafka_is_finished() -> None:
    assert finished_blockers(facts()) == ()


def test_each_thing_still_in_the_tree_blocks_finishing_and_is_named() -> None:
    member = Member("g_c1", Registration({"t": 1}), NOW, False)
    extra = (node("ids/g_c1", ephemeral=7), node("migration/ids/g_b1", ephemeral=7), node("owners/t"),
             node("owners/t/0", b"g_c1-0", ephemeral=7), node("migration/authority/g_b1", ephemeral=8))  # fmt: skip
    tree = GroupTree("g", (*finished_tree().nodes, *extra))
    found = finished_blockers(facts(tree, members=(member,), migration_ids=frozenset({"g_b1"})))
    assert kinds(found) == [BlockerKind.MEMBERS, BlockerKind.BRIDGES, BlockerKind.OWNERS, BlockerKind.LIVE_SESSION]
    assert found[0].items == ("g_c1",) and found[1].items == ("g_b1",) and found[2].items == ("owners/t/0",)
    line = refusal("g", found, "is not finished")
    assert line == (
        "group g is not finished: members: 1 members still registered under ids: g_c1 "
        "(also: bridges, owners, live-session)"
    )


def test_kafka_offsets_missing_or_behind_block_finishing_and_one_at_or_beyond_does_not() -> None:
    found = finished_blockers(facts(committed={TP("t", 0): 4}))
    assert kinds(found) == [BlockerKind.KAFKA_OFFSET_MISSING, BlockerKind.KAFKA_OFFSET_BEHIND]
    assert found[0].items == ("t-1 (zookeeper 7)",) and found[1].items == ("t-0 (kafka 4 < zookeeper 5)",)
    assert finished_blockers(facts(committed={TP("t", 0): 5, TP("t", 1): -1}))[0].items == ("t-1 (zookeeper 7)",)


def test_a_pykafka_group_keeps_no_offsets_in_zookeeper_so_kafka_has_all_it_needs() -> None:
    tree = GroupTree("g", (node(""), node("ids"), node("owners"), node("owners/b't'")))
    assert finished_blockers(facts(tree, committed={})) == ()


def test_an_old_group_nobody_uses_is_abandoned_and_any_sign_of_use_says_what_it_is() -> None:
    quiet = facts(committed={}, state=KafkaGroupState.DEAD)
    assert abandoned_blockers(quiet, NOW, 30 * 86_400) == ()
    recent = replace(quiet, tree=finished_tree(mtime=NOW - 2 * DAY_MS))
    assert kinds(abandoned_blockers(recent, NOW, 30 * 86_400)) == [BlockerKind.RECENT_COMMIT]
    assert abandoned_blockers(recent, NOW, 86_400) == ()
    live = KafkaMember("m-1", "app", "/1.2.3.4", None, ())
    assert kinds(abandoned_blockers(facts(kafka_members=[live], state=KafkaGroupState.STABLE), NOW)) == [
        BlockerKind.KAFKA_MEMBERS,
        BlockerKind.KAFKA_OFFSETS_RETAINED,
    ]
    assert kinds(abandoned_blockers(facts(committed={}), NOW)) == [BlockerKind.KAFKA_OFFSETS_RETAINED]


def test_abandoned_skips_the_kafka_offset_condition_but_not_the_members() -> None:
    no_kafka_offsets = facts(committed={}, state=KafkaGroupState.DEAD)
    assert kinds(finished_blockers(no_kafka_offsets)) == [BlockerKind.KAFKA_OFFSET_MISSING]
    assert abandoned_blockers(no_kafka_offsets, NOW) == ()
    tree = GroupTree("g", (*finished_tree().nodes, node("ids/g_c1", ephemeral=7)))
    assert kinds(abandoned_blockers(replace(no_kafka_offsets, tree=tree), NOW)) == [BlockerKind.MEMBERS]


def test_the_last_commit_is_the_newest_offset_node_or_else_the_newest_node() -> None:
    tree = finished_tree()
    newer_mode = GroupTree("g", (*tree.nodes[:-1], node("migration/audit", mtime=NOW)))
    assert last_commit_ms(newer_mode) == NOW - 40 * DAY_MS
    assert last_commit_ms(GroupTree("g", (node("", mtime=3), node("ids", mtime=9)))) == 9
    assert last_commit_ms(GroupTree("g")) is None


def test_a_protected_tree_needs_the_admin_identity_to_delete_or_create() -> None:
    world_read = (NodeAcl(int(Perm.READ), "world", "anyone"), NodeAcl(31, *ADMIN))
    tree = GroupTree("g", (node("", acls=world_read), node("ids"), node("migration", acls=world_read),
                           node("migration/mode", b"kafka", acls=world_read)))  # fmt: skip
    blocked = lacking(tree, WORLD_ALL, frozenset(), Perm.DELETE)
    assert kinds(blocked) == [BlockerKind.PROTECTED]
    assert blocked[0].items == (
        "ids (needs delete on the group's root: world:anyone=--r--, digest:ops:hash==cdrwa)",
        "migration (needs delete on the group's root: world:anyone=--r--, digest:ops:hash==cdrwa)",
        "migration/mode (needs delete on migration: world:anyone=--r--, digest:ops:hash==cdrwa)",
    )
    assert lacking(tree, WORLD_ALL, frozenset({ADMIN}), Perm.DELETE) == ()
    assert kinds(lacking(tree, (NodeAcl(int(Perm.READ), "world", "anyone"),), frozenset({ADMIN}), Perm.CREATE)) == [
        BlockerKind.PROTECTED
    ]


paths = st.lists(
    st.lists(st.sampled_from(["ids", "owners", "offsets", "t", "0", "1", "migration", "mode"]), min_size=1, max_size=4),
    max_size=25,
)


def closed_tree(parts_lists: list[list[str]]) -> GroupTree:
    """Every listed path with all of its ancestors, as ZooKeeper's trees always are."""
    paths_set = {""}
    for parts in parts_lists:
        paths_set |= {"/".join(parts[: i + 1]) for i in range(len(parts))}
    return GroupTree("g", tuple(node(p) for p in paths_set))


@given(paths)
def test_children_first_puts_every_node_after_all_of_its_descendants(parts_lists: list[list[str]]) -> None:
    order = [n.path for n in closed_tree(parts_lists).children_first()]
    position = {p: i for i, p in enumerate(order)}
    for path in order:
        parent = path.rsplit("/", 1)[0] if "/" in path else ("" if path else None)
        if parent is not None:
            assert position[parent] > position[path]
    tree = closed_tree(parts_lists)
    assert [n.path for n in tree.nodes] == sorted(order, key=lambda p: (p.count("/") + bool(p), p))


@given(
    st.dictionaries(st.integers(0, 5), st.integers(0, 100)), st.dictionaries(st.integers(0, 7), st.integers(-1, 100))
)
def test_finished_on_offsets_holds_exactly_when_kafka_is_at_or_beyond_zookeeper_everywhere(zk, kafka) -> None:
    committed = {TP("t", p): o for p, o in kafka.items()}
    found = finished_blockers(facts(finished_tree(zk), committed))
    covered = all(kafka.get(p, -1) >= o for p, o in zk.items())
    assert (found == ()) is covered
    named = {item.split(" ")[0] for b in found for item in b.items}
    assert named == {f"t-{p}" for p, o in zk.items() if kafka.get(p, -1) < o}


@given(st.integers(0, 60 * DAY_MS), st.integers(1, 60 * 86_400))
def test_recent_commit_blocks_exactly_within_the_limit(age_ms: int, after_s: int) -> None:
    quiet = facts(finished_tree(mtime=NOW - age_ms), committed={}, state=KafkaGroupState.DEAD)
    assert (abandoned_blockers(quiet, NOW, after_s) == ()) is (age_ms >= after_s * 1000)


@given(paths, st.integers(5, 30))  # the last transaction holds up to the 5 membership nodes
def test_deletions_fit_their_transactions_membership_folders_and_root_last(parts_lists, max_ops: int) -> None:
    tree = closed_tree([["ids"], ["migration", "ids"], ["owners"], *parts_lists])
    batches = transactions(tree, max_ops)
    flat = [n.path for batch in batches for n in batch]
    assert sorted(flat) == sorted(n.path for n in tree.nodes)
    assert all(len(b) <= max_ops for b in batches)
    position = {p: i for i, p in enumerate(flat)}
    for path in flat:
        if path:
            assert position[path.rsplit("/", 1)[0] if "/" in path else ""] > position[path]
    assert {n.path for n in batches[-1]} >= {"", "ids", "owners", "migration", "migration/ids"}
    assert (len(batches) == 1) is (len(tree.nodes) <= max_ops)


def test_a_cleanup_is_judged_by_its_rule_then_by_who_may_delete() -> None:
    world_read = (NodeAcl(int(Perm.READ), "world", "anyone"), NodeAcl(31, *ADMIN))
    tree = GroupTree("g", tuple(replace(n, acls=world_read) if n.path == "" else n for n in finished_tree().nodes))
    quiet = facts(tree, committed={}, state=KafkaGroupState.DEAD)

    def judged(rule: Rule, identities=frozenset()) -> list[BlockerKind]:
        return kinds(cleanup_blockers(quiet, rule, container_acls=WORLD_ALL, identities=identities, now_ms=NOW))

    assert judged(Rule.FINISHED) == [BlockerKind.KAFKA_OFFSET_MISSING, BlockerKind.PROTECTED]
    assert judged(Rule.ABANDONED) == [BlockerKind.PROTECTED]
    assert judged(Rule.ABANDONED, frozenset({ADMIN})) == []
