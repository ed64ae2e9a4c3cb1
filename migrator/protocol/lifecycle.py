"""When a group's legacy tree may go: the rules `cleanup` and the fleet scan decide over, pure.

A group is **finished** when nothing registers, owns or reads under `/consumers/<group>` any more and Kafka
holds every offset ZooKeeper holds (at or beyond it), so deleting the tree can neither re-read nor lose a
record. A group is **abandoned** when nobody has used it for a while: no member in ZooKeeper, no live Kafka
group, and no offset commit for `abandoned_after`. Each rule answers with the blockers that stand in its way
(none: the rule holds), each naming what is still there.

What a commit's age is judged from: ZooKeeper's offset nodes' mtime. Kafka's OffsetFetch carries no commit
time, so Kafka's side is judged from what it does expose: a group with members is live, and a group Kafka still
holds committed offsets for (state `Empty`, or any committed offset) committed or had a member within the
brokers' `offsets.retention.minutes` (7 days by default), so it counts as recently used.

The tree model (`GroupTree`) is every node under the group with its data, ACLs and stat, as the archive keeps
it; paths are relative to the group's root (`""` is the root itself), so the model does not depend on the
chroot or on where the group lives.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from enum import StrEnum

from migrator.protocol.acl import WORLD, Perm, perms_word
from migrator.protocol.group_view import GroupView
from migrator.protocol.kafka import KafkaGroup, KafkaGroupState
from migrator.protocol.partition import TopicPartition

DEFAULT_ABANDONED_AFTER_S = 30 * 24 * 3600
SHOWN = 5
"""How many items a blocker's line names before it says how many more there are."""


@dataclass(frozen=True, slots=True)
class NodeAcl:
    perms: int
    scheme: str
    id: str

    def grants(self, identities: Set[tuple[str, str]]) -> int:
        """The permissions this entry gives a client authenticated as `identities` ((scheme, id) pairs)."""
        if (self.scheme, self.id) == WORLD or (self.scheme, self.id) in identities:
            return self.perms
        return 0

    def __str__(self) -> str:
        return f"{self.scheme}:{self.id}={perms_word(self.perms)}"


@dataclass(frozen=True, slots=True)
class NodeStat:
    """A znode's stat as ZooKeeper returned it (kept in the archive; a restored node gets new ones)."""

    czxid: int
    mzxid: int
    pzxid: int
    ctime_ms: int
    mtime_ms: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int
    data_length: int
    num_children: int


@dataclass(frozen=True, slots=True)
class TreeNode:
    path: str
    """Relative to the group's root: `""` (the root), `offsets/orders/0`, ..."""
    data: bytes
    acls: tuple[NodeAcl, ...]
    stat: NodeStat

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.path.split("/")) if self.path else ()

    @property
    def depth(self) -> int:
        return len(self.parts)

    @property
    def parent(self) -> str | None:
        """The parent's relative path; None for the root (its parent is `/consumers`)."""
        return None if not self.path else "/".join(self.parts[:-1])

    @property
    def ephemeral(self) -> bool:
        return self.stat.ephemeral_owner != 0


@dataclass(frozen=True, slots=True)
class GroupTree:
    """Every node under one group's root, parents before children."""

    group: str
    nodes: tuple[TreeNode, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(sorted(self.nodes, key=lambda n: (n.depth, n.path))))

    @property
    def exists(self) -> bool:
        return bool(self.nodes)

    def under(self, *prefix: str) -> tuple[TreeNode, ...]:
        """The nodes exactly one level below `prefix` (e.g. `under("ids")`: the member nodes)."""
        return tuple(n for n in self.nodes if n.depth == len(prefix) + 1 and n.parts[:-1] == prefix)

    def at_depth(self, first: str, depth: int) -> tuple[TreeNode, ...]:
        """The nodes `depth` levels down whose first part is `first` (`at_depth("offsets", 3)`: offset nodes)."""
        return tuple(n for n in self.nodes if n.depth == depth and n.parts[0] == first)

    def children_first(self) -> tuple[TreeNode, ...]:
        """The deletion order: every node after all of its children."""
        return tuple(sorted(self.nodes, key=lambda n: (-n.depth, n.path)))

    def newest_mtime_ms(self) -> int | None:
        return max((n.stat.mtime_ms for n in self.nodes), default=None)


class Rule(StrEnum):
    """Which rule a cleanup judges a group by."""

    FINISHED = "finished"
    ABANDONED = "abandoned"


class BlockerKind(StrEnum):
    MEMBERS = "members"
    BRIDGES = "bridges"
    OWNERS = "owners"
    LIVE_SESSION = "live-session"
    KAFKA_OFFSET_MISSING = "kafka-offset-missing"
    KAFKA_OFFSET_BEHIND = "kafka-offset-behind"
    KAFKA_MEMBERS = "kafka-members"
    KAFKA_OFFSETS_RETAINED = "kafka-offsets-retained"
    RECENT_COMMIT = "recent-commit"
    PROTECTED = "protected"


_WHAT = {
    BlockerKind.MEMBERS: "members still registered under ids",
    BlockerKind.BRIDGES: "bridges still registered under migration/ids",
    BlockerKind.OWNERS: "owner nodes still held",
    BlockerKind.LIVE_SESSION: "ephemeral nodes of a live session",
    BlockerKind.KAFKA_OFFSET_MISSING: "partitions with a ZooKeeper offset and no Kafka committed offset",
    BlockerKind.KAFKA_OFFSET_BEHIND: "partitions whose Kafka committed offset is behind ZooKeeper's",
    BlockerKind.KAFKA_MEMBERS: "members in the live Kafka group",
    BlockerKind.KAFKA_OFFSETS_RETAINED: "Kafka still holds committed offsets (a commit within its retention)",
    BlockerKind.RECENT_COMMIT: "an offset commit newer than the abandoned-after limit",
    BlockerKind.PROTECTED: "nodes whose parent's ACL denies this identity what it needs (give the admin --zk-auth)",
}


@dataclass(frozen=True, slots=True)
class Blocker:
    """One reason the group's tree may not go, with the things that are still there."""

    kind: BlockerKind
    items: tuple[str, ...]

    def describe(self) -> str:
        shown = ", ".join(self.items[:SHOWN])
        more = f" and {len(self.items) - SHOWN} more" if len(self.items) > SHOWN else ""
        return f"{self.kind.value}: {len(self.items)} {_WHAT[self.kind]}: {shown}{more}"


def refusal(group: str, blockers: tuple[Blocker, ...], why: str) -> str:
    """The one line a refusal ends with: `why` (e.g. `is not finished`), the first blocker in full, the others
    by kind."""
    first, rest = blockers[0], blockers[1:]
    others = f" (also: {', '.join(b.kind.value for b in rest)})" if rest else ""
    return f"group {group} {why}: {first.describe()}{others}"


@dataclass(frozen=True, slots=True)
class GroupFacts:
    """What both rules decide over: the group read (as `status` reads it), its tree, and Kafka's side."""

    view: GroupView
    tree: GroupTree
    kafka: KafkaGroup
    kafka_committed: Mapping[TopicPartition, int] = field(default_factory=dict)
    """Kafka-committed next offsets; -1 or missing: none."""


def _blocker(kind: BlockerKind, items: Iterable[str]) -> tuple[Blocker, ...]:
    found = tuple(sorted(set(items)))
    return (Blocker(kind, found),) if found else ()


def _membership(facts: GroupFacts) -> tuple[Blocker, ...]:
    """Members, bridges, owner nodes and any other ephemeral node: someone still uses the tree."""
    view, tree = facts.view, facts.tree
    members = set(view.member_ids) | {n.parts[-1] for n in tree.under("ids")}
    bridges = set(view.migration_ids) | {n.parts[-1] for n in tree.under("migration", "ids")}
    owners = {n.path for n in tree.at_depth("owners", 3)}
    read = {f"owners/{tp.topic}/{tp.partition}": f"{tp} ({thread})" for tp, thread in view.owners.items()}
    owners |= {text for path, text in read.items() if path not in owners}
    counted = {"ids", "owners", "migration/ids"}
    live = [n.path for n in tree.nodes if n.ephemeral and not any(n.path.startswith(f"{c}/") for c in counted)]
    return (
        _blocker(BlockerKind.MEMBERS, members)
        + _blocker(BlockerKind.BRIDGES, bridges)
        + _blocker(BlockerKind.OWNERS, owners)
        + _blocker(BlockerKind.LIVE_SESSION, live)
    )


def _kafka_offsets(facts: GroupFacts) -> tuple[Blocker, ...]:
    """Every partition ZooKeeper holds an offset for needs a Kafka commit at or beyond it."""
    missing, behind = [], []
    for tp, zk_offset in sorted(facts.view.offsets.items()):
        kafka_offset = facts.kafka_committed.get(tp, -1)
        if kafka_offset < 0:
            missing.append(f"{tp} (zookeeper {zk_offset})")
        elif kafka_offset < zk_offset:
            behind.append(f"{tp} (kafka {kafka_offset} < zookeeper {zk_offset})")
    return _blocker(BlockerKind.KAFKA_OFFSET_MISSING, missing) + _blocker(BlockerKind.KAFKA_OFFSET_BEHIND, behind)


def finished_blockers(facts: GroupFacts) -> tuple[Blocker, ...]:
    """Why the group is not finished (empty: it is): someone still in its tree, or an offset Kafka lacks."""
    return _membership(facts) + _kafka_offsets(facts)


def last_commit_ms(tree: GroupTree) -> int | None:
    """When the group last committed to ZooKeeper: its offset nodes' newest mtime; without any offset node the
    newest mtime of the tree (when it was last written at all); None for an absent tree."""
    offsets = tree.at_depth("offsets", 3)
    if offsets:
        return max(n.stat.mtime_ms for n in offsets)
    return tree.newest_mtime_ms()


def _kafka_activity(kafka: KafkaGroup, committed: Mapping[TopicPartition, int]) -> tuple[Blocker, ...]:
    members = [f"{m.client_id} ({m.member_id})" for m in kafka.members]
    retained = [f"{tp} ({offset})" for tp, offset in sorted(committed.items()) if offset >= 0]
    if not retained and not members and kafka.state is KafkaGroupState.EMPTY:
        retained = [f"group {kafka.group_id} (state Empty)"]
    return _blocker(BlockerKind.KAFKA_MEMBERS, members) + _blocker(BlockerKind.KAFKA_OFFSETS_RETAINED, retained)


def _recent_commit(tree: GroupTree, now_ms: int, abandoned_after_s: float) -> tuple[Blocker, ...]:
    last = last_commit_ms(tree)
    if last is None or now_ms - last >= abandoned_after_s * 1000:
        return ()
    age_s = max(0, (now_ms - last) // 1000)
    return (Blocker(BlockerKind.RECENT_COMMIT, (f"last written {age_s}s ago (limit {abandoned_after_s:g}s)",)),)


def abandoned_blockers(
    facts: GroupFacts, now_ms: int, abandoned_after_s: float = DEFAULT_ABANDONED_AFTER_S
) -> tuple[Blocker, ...]:
    """Why the group is not abandoned (empty: it is): a member anywhere, or a commit within the limit."""
    return (
        _membership(facts)
        + _kafka_activity(facts.kafka, facts.kafka_committed)
        + _recent_commit(facts.tree, now_ms, abandoned_after_s)
    )


def granted(acls: Iterable[NodeAcl], identities: Set[tuple[str, str]]) -> int:
    """What a node's ACL lets a client authenticated as `identities` do."""
    perms = 0
    for acl in acls:
        perms |= acl.grants(identities)
    return perms


def lacking(
    tree: GroupTree, container_acls: tuple[NodeAcl, ...], identities: Set[tuple[str, str]], perm: Perm
) -> tuple[Blocker, ...]:
    """The nodes whose parent does not grant `perm` (DELETE to delete them, CREATE to restore them), the root's
    parent being the container (`/consumers`) with `container_acls`. A super user's rights cannot be seen in an
    ACL, so they are not assumed: the admin identity is the one `acl protect` wrote into the ACLs."""
    acls = {n.path: n.acls for n in tree.nodes}
    denied = []
    for node in tree.nodes:
        parent_acls = container_acls if node.parent is None else acls.get(node.parent, ())
        if not granted(parent_acls, identities) & perm:
            parent = "/consumers" if node.parent is None else node.parent or "the group's root"
            word = perm.name.lower() if perm.name else str(perm)
            acl_text = ", ".join(map(str, parent_acls))
            denied.append(f"{node.path or 'the root'} (needs {word} on {parent}: {acl_text})")
    return _blocker(BlockerKind.PROTECTED, denied)


def cleanup_blockers(
    facts: GroupFacts,
    rule: Rule,
    *,
    container_acls: tuple[NodeAcl, ...],
    identities: Set[tuple[str, str]],
    now_ms: int,
    abandoned_after_s: float = DEFAULT_ABANDONED_AFTER_S,
) -> tuple[Blocker, ...]:
    """Everything that stands in the way of deleting the group's tree: the rule's blockers, then the nodes
    `identities` may not delete (`container_acls`: the ACL of the group's parent, `/consumers`)."""
    if rule is Rule.ABANDONED:
        blockers = abandoned_blockers(facts, now_ms, abandoned_after_s)
    else:
        blockers = finished_blockers(facts)
    return blockers + lacking(facts.tree, container_acls, identities, Perm.DELETE)
