"""A group's legacy tree in ZooKeeper: read whole (data, ACLs, stat), archived to one JSON file, deleted
race-safely, and put back exactly.

Deletion runs as ZooKeeper multi-op transactions, each delete carrying the version the archive read, so a node
written since (an offset committed) fails its transaction; the membership folders (`ids`, `migration/ids`,
`owners`, `migration`) and the root go in the last one, so a member that registers at any time before it leaves a
child there and that transaction fails (ZooKeeper refuses to delete a node with children). When an earlier
transaction had already removed nodes, they are created again from the archive. A group that fits in one
transaction (most do) is deleted whole or not at all.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
)
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.states import ZnodeStat
from kazoo.security import ACL, Id

from migrator.errors import MigratorError, RefusedError
from migrator.protocol.group_view import GroupView
from migrator.protocol.layout_dialect import GroupLayout
from migrator.protocol.lifecycle import GroupTree, NodeAcl, NodeStat, TreeNode
from migrator.zk.group_reader import read_groups_with_layout
from migrator.zk.paths import CONSUMERS, GroupPaths
from migrator.zk.pipeline import MISSING

SCHEMA = 1
"""The archive file's `schema`; a reader refuses any other."""
KIND = "migrator-group-archive"
MAX_OPS = 500
"""Operations per transaction: well under ZooKeeper's 1 MB request limit (jute.maxbuffer) for typical nodes."""
MAX_TXN_BYTES = 512 * 1024
LAST = ("migration/ids", "ids", "owners", "migration", "")
"""Deleted in the final transaction: where a registering member leaves a child, and the root."""
RESULT_TIMEOUT_S = 30.0


def absolute(group: str, relative: str) -> str:
    root = GroupPaths(group).root
    return f"{root}/{relative}" if relative else root


def _acl(acl: ACL) -> NodeAcl:
    return NodeAcl(int(acl.perms), str(acl.id.scheme), str(acl.id.id))


def _stat(stat: Any) -> NodeStat:
    return NodeStat(
        czxid=stat.czxid, mzxid=stat.mzxid, pzxid=stat.pzxid, ctime_ms=stat.ctime, mtime_ms=stat.mtime,
        version=stat.version, cversion=stat.cversion, aversion=stat.aversion, ephemeral_owner=stat.ephemeralOwner,
        data_length=stat.dataLength, num_children=stat.numChildren,
    )  # fmt: skip


def _answer(result: IAsyncResult) -> Any:
    try:
        return result.get(timeout=RESULT_TIMEOUT_S)
    except NoNodeError:
        return None


def read_tree(zk: KazooClient, group: str) -> GroupTree:
    """Every node under `/consumers/<group>` with its data, ACLs and stat; one pipelined round trip per tree
    level. A node gone between its listing and its read (a member leaving) is left out."""
    nodes: list[TreeNode] = []
    level = [""]
    while level:
        pending = [
            (rel, zk.get_async(absolute(group, rel)), zk.get_acls_async(absolute(group, rel)),
             zk.get_children_async(absolute(group, rel)))
            for rel in level
        ]  # fmt: skip
        level = []
        for rel, data_request, acl_request, children_request in pending:
            got, acls, children = _answer(data_request), _answer(acl_request), _answer(children_request)
            if got is None or acls is None or children is None:
                continue
            data, stat = got
            nodes.append(TreeNode(rel, data or b"", tuple(_acl(a) for a in acls[0]), _stat(stat)))
            level += [f"{rel}/{child}" if rel else child for child in sorted(children)]
    return GroupTree(group, tuple(nodes))


def read_acls(zk: KazooClient, path: str = CONSUMERS) -> tuple[NodeAcl, ...]:
    """A node's ACL (by default `/consumers`', which decides who may delete or create a group's root)."""
    try:
        acls, _ = zk.get_acls(path)
    except NoNodeError:
        return ()
    return tuple(_acl(a) for a in acls)


# --- the group read from its tree ---------------------------------------------------------------------------


def view_of_tree(tree: GroupTree) -> tuple[GroupView, GroupLayout]:
    """The group as the group reader reads it from ZooKeeper (`read_group_with_layout`: offsets, no leaders,
    no fence), read from its tree instead: the reader's own decoding over the nodes the tree holds, no second
    read. Pure."""
    return read_groups_with_layout(TreePipeline(tree), [tree.group])[0]


class TreePipeline:
    """A `ReadPipeline` answered from a tree already read, as ZooKeeper answers the same reads; a read outside
    the group's root is a programming error (the tree cannot answer it)."""

    def __init__(self, tree: GroupTree) -> None:
        self._group = tree.group
        self._root = GroupPaths(tree.group).root
        self._nodes = {absolute(tree.group, n.path): n for n in tree.nodes}
        self._children: dict[str, list[str]] = {}
        for n in tree.nodes:
            if n.parent is not None:
                self._children.setdefault(absolute(tree.group, n.parent), []).append(n.parts[-1])
        self._pending: list[tuple[Callable[[Any], None], Any]] = []

    def _node(self, path: str) -> TreeNode | None:
        if path != self._root and not path.startswith(self._root + "/"):
            raise ValueError(f"{path} is outside the tree of group {self._group}")
        return self._nodes.get(path)

    def children(self, path: str, on_result: Callable[[Any], None]) -> None:
        found = self._node(path) is not None
        self._pending.append((on_result, list(self._children.get(path, ())) if found else MISSING))

    def get(self, path: str, on_result: Callable[[Any], None]) -> None:
        node = self._node(path)
        self._pending.append((on_result, MISSING if node is None else (node.data, _znode_stat(node.stat))))

    def exists(self, path: str, on_result: Callable[[Any], None]) -> None:
        node = self._node(path)
        self._pending.append((on_result, None if node is None else _znode_stat(node.stat)))

    def drain(self) -> None:
        pending, self._pending = self._pending, []
        for on_result, result in pending:
            on_result(result)


def _znode_stat(stat: NodeStat) -> ZnodeStat:
    return ZnodeStat(
        czxid=stat.czxid, mzxid=stat.mzxid, ctime=stat.ctime_ms, mtime=stat.mtime_ms, version=stat.version,
        cversion=stat.cversion, aversion=stat.aversion, ephemeralOwner=stat.ephemeral_owner,
        dataLength=stat.data_length, numChildren=stat.num_children, pzxid=stat.pzxid,
    )  # fmt: skip


# --- the archive file -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Archive:
    """One archived group: its tree, where and when it was read."""

    tree: GroupTree
    taken_ms: int
    zookeeper: str
    summary: dict[str, Any] = field(default_factory=dict)
    """For a reader of the file (mode, offsets, audit entries); restore uses only the nodes."""

    @property
    def group(self) -> str:
        return self.tree.group


def _node_doc(node: TreeNode) -> dict[str, Any]:
    doc: dict[str, Any] = {"path": node.path, "data": base64.b64encode(node.data).decode("ascii")}
    with contextlib.suppress(UnicodeDecodeError):
        doc["text"] = node.data.decode("utf-8")
    doc["acls"] = [{"scheme": a.scheme, "id": a.id, "perms": a.perms} for a in node.acls]
    doc["stat"] = {name: getattr(node.stat, name) for name in NodeStat.__slots__}
    return doc


def to_json(archive: Archive) -> str:
    doc = {
        "kind": KIND,
        "schema": SCHEMA,
        "group": archive.group,
        "taken_ms": archive.taken_ms,
        "zookeeper": archive.zookeeper,
        "summary": archive.summary,
        "nodes": [_node_doc(n) for n in archive.tree.nodes],
    }
    return json.dumps(doc, indent=1)


def _node_of(doc: dict[str, Any]) -> TreeNode:
    acls = tuple(NodeAcl(int(a["perms"]), str(a["scheme"]), str(a["id"])) for a in doc["acls"])
    stat = NodeStat(**{name: int(doc["stat"][name]) for name in NodeStat.__slots__})
    return TreeNode(str(doc["path"]), base64.b64decode(doc["data"], validate=True), acls, stat)


def from_json(text: str, source: str) -> Archive:
    """The archive in `text`; a file that is not one (or of another schema) is refused naming `source`."""
    try:
        doc = json.loads(text)
        if doc.get("kind") != KIND or doc.get("schema") != SCHEMA:
            raise RefusedError(
                f"{source} is not a migrator group archive of schema {SCHEMA} "
                f"(kind {doc.get('kind')!r}, schema {doc.get('schema')!r}); nothing was restored"
            )
        tree = GroupTree(str(doc["group"]), tuple(_node_of(n) for n in doc["nodes"]))
        return Archive(tree, int(doc["taken_ms"]), str(doc["zookeeper"]), dict(doc.get("summary") or {}))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RefusedError(f"{source} is not a readable group archive: {type(exc).__name__} {exc}") from exc


def write_archive(path: Path, archive: Archive) -> None:
    """Write the archive and fsync it (and its folder) before returning; an existing file is never
    overwritten (refused, exit 2)."""
    try:
        with open(path, "x", encoding="utf-8") as out:
            out.write(to_json(archive))
            out.flush()
            os.fsync(out.fileno())
    except FileExistsError as exc:
        raise RefusedError(f"--archive {path} exists already; nothing was deleted") from exc
    folder = os.open(path.parent if str(path.parent) else Path("."), os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def read_archive(path: Path) -> Archive:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RefusedError(f"cannot read {path}: {exc.strerror}; nothing was restored") from exc
    return from_json(text, str(path))


# --- deleting and restoring -------------------------------------------------------------------------------


class Stop(Enum):
    """Why a deleting transaction failed: the tree is not what the archive holds any more."""

    CHANGED = "changed since it was archived"
    CHILD_ADDED = "gained a child (a member registering, or a node written)"
    VANISHED = "was deleted by someone else"
    EXISTS = "was created by someone else meanwhile"
    DENIED = "is denied to this identity by an ACL"
    OTHER = "was refused by ZooKeeper"


@dataclass(frozen=True, slots=True)
class Deleted:
    """What `delete_tree` did: everything (`stopped` None), or it stopped and put back what it had removed."""

    removed: int
    transactions: int
    stopped: Stop | None = None
    at: str = ""
    """The path whose operation failed."""
    restored: int = 0
    not_restored: tuple[str, ...] = ()
    """Removed nodes that could not be put back because someone created them again first."""


def transactions(tree: GroupTree, max_ops: int = MAX_OPS, max_bytes: int = MAX_TXN_BYTES) -> list[list[TreeNode]]:
    """The deletions, children first, cut into transactions; the membership folders and the root last."""
    last = [n for n in tree.children_first() if n.path in LAST]
    rest = [n for n in tree.children_first() if n.path not in LAST]
    batches: list[list[TreeNode]] = []
    size = 0
    for node in rest:
        if not batches or len(batches[-1]) >= max_ops or size >= max_bytes:
            batches.append([])
            size = 0
        batches[-1].append(node)
        size += len(node.path) + 64
    if batches and len(batches[-1]) + len(last) <= max_ops and size < max_bytes:
        batches[-1] += last  # a group that fits in one transaction goes whole or not at all
        return batches
    return [*batches, last] if last else batches


_STOPS = {
    BadVersionError: Stop.CHANGED,
    NotEmptyError: Stop.CHILD_ADDED,
    NoNodeError: Stop.VANISHED,
    NodeExistsError: Stop.EXISTS,
    NoAuthError: Stop.DENIED,
}


def _failure(results: Sequence[Any], batch: Sequence[TreeNode]) -> tuple[Stop, str] | None:
    for result, node in zip(results, batch, strict=False):
        if isinstance(result, Exception) and not isinstance(result, RolledBackError):
            return _STOPS.get(type(result), Stop.OTHER), node.path
    return None


def _delete_batch(zk: KazooClient, group: str, batch: Sequence[TreeNode]) -> tuple[Stop, str] | None:
    txn = zk.transaction()
    for node in batch:
        txn.delete(absolute(group, node.path), version=node.stat.version)
    return _failure(txn.commit(), batch)


def delete_tree(
    zk: KazooClient,
    tree: GroupTree,
    *,
    max_ops: int = MAX_OPS,
    between: Callable[[int], None] | None = None,
) -> Deleted:
    """Delete exactly the nodes of `tree` (as archived: same versions, no new child), in transactions; on the
    first failure, stop and create again what earlier transactions removed. `between(i)` runs before
    transaction i > 0 (a test's way into the race)."""
    batches = transactions(tree, max_ops)
    removed: list[TreeNode] = []
    for i, batch in enumerate(batches):
        if between is not None and i > 0:
            between(i)
        failed = _delete_batch(zk, tree.group, batch)
        if failed is not None:
            put_back = restore_nodes(zk, tree.group, removed)
            return Deleted(len(removed), i + 1, failed[0], failed[1], len(removed) - len(put_back), put_back)
        removed += batch
    return Deleted(len(removed), len(batches))


def _create_batch(zk: KazooClient, group: str, batch: Sequence[TreeNode]) -> tuple[Stop, str] | None:
    txn = zk.transaction()
    for node in batch:
        acl = [ACL(a.perms, Id(a.scheme, a.id)) for a in node.acls]
        txn.create(absolute(group, node.path), node.data, acl=acl)
    return _failure(txn.commit(), batch)


def _create_one(zk: KazooClient, group: str, node: TreeNode) -> bool:
    acl = [ACL(a.perms, Id(a.scheme, a.id)) for a in node.acls]
    try:
        zk.create(absolute(group, node.path), node.data, acl=acl)
    except NodeExistsError:
        return False
    return True


def restore_nodes(zk: KazooClient, group: str, nodes: Sequence[TreeNode], max_ops: int = MAX_OPS) -> tuple[str, ...]:
    """Create `nodes` (parents first) with their data and ACLs, in transactions; a transaction that fails
    because someone created one of its nodes first is redone node by node. Returns the nodes left as someone
    else created them."""
    ordered = sorted(nodes, key=lambda n: (n.depth, n.path))
    taken: list[str] = []
    for start in range(0, len(ordered), max_ops):
        batch = ordered[start : start + max_ops]
        if _create_batch(zk, group, batch) is not None:
            taken += [n.path for n in batch if not _create_one(zk, group, n)]
    return tuple(taken)


def refuse_present(zk: KazooClient, group: str) -> None:
    """A restore puts back a cleaned group only: it never mixes archived nodes into a live tree."""
    if zk.exists(GroupPaths(group).root) is not None:
        raise RefusedError(
            f"group {group} exists in ZooKeeper: restore puts back a cleaned group only; nothing was restored"
        )


def restore_tree(zk: KazooClient, archive: Archive, max_ops: int = MAX_OPS) -> int:
    """Put an archived group back, data, children and ACLs exactly; refused (nothing written) while the group
    exists in ZooKeeper. Returns the nodes created."""
    group = archive.group
    refuse_present(zk, group)
    zk.ensure_path(CONSUMERS)
    ordered = list(archive.tree.nodes)
    for start in range(0, len(ordered), max_ops):
        failed = _create_batch(zk, group, ordered[start : start + max_ops])
        if failed is not None and start == 0:
            raise RefusedError(
                f"restoring group {group}: {absolute(group, failed[1])} {failed[0].value}; nothing was restored"
            )
        if failed is not None:
            raise MigratorError(
                f"restoring group {group} stopped: {absolute(group, failed[1])} {failed[0].value}; "
                f"the first {start} of {len(ordered)} nodes are restored"
            )
    return len(ordered)
