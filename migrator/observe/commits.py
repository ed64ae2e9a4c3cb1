"""The history of a group's ZooKeeper offset commits, as the observer sees them.

Each commit is the offset node's value with its `mzxid`, the server's order of writes: a commit and an
owner node's creation (`OwnerInterval.czxid`) compare exactly, whatever the clocks. A kazoo `TreeCache` of
`offsets` (`poller.ZooKeeperTree`) delivers each write it reads; a value overwritten before the cache read it
is missed, which only ever makes `claimed_below_commit` explain fewer duplicates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kazoo.recipe.cache import NodeData

from migrator.observe.poller import Leaf, ZooKeeperTree
from migrator.zk.paths import GroupPaths


@dataclass(frozen=True, slots=True)
class Commit:
    """`offset` (the next record to process) stored for topic-partition by the write `mzxid`."""

    topic: str
    partition: int
    offset: int
    mzxid: int


class CommitsWatcher(ZooKeeperTree):
    """Record every observed write of one group's `/offsets` nodes; a context manager, like `OwnersWatcher`."""

    def __init__(self, zookeeper: str, group: str) -> None:
        super().__init__(zookeeper, GroupPaths(group).offsets, f"commits-watcher-{group}")
        self._seen: dict[tuple[str, int], int] = {}  # topic-partition -> last mzxid recorded
        self._commits: list[Commit] = []

    def commits(self) -> list[Commit]:
        """Every recorded commit, in ZooKeeper's order."""
        with self._lock:
            return sorted(self._commits, key=lambda c: c.mzxid)

    def _changed(self, leaf: Leaf, path: str, node: NodeData | None) -> None:
        if node is not None:
            self._record(leaf, node)

    def _final(self, nodes: Mapping[str, tuple[Leaf, NodeData]]) -> None:
        for leaf, node in nodes.values():
            self._record(leaf, node)

    def _record(self, leaf: Leaf, node: NodeData) -> None:
        try:
            offset = int(node.data)
        except (TypeError, ValueError):
            return
        if self._seen.get(leaf) != node.stat.mzxid:
            self._seen[leaf] = node.stat.mzxid
            self._commits.append(Commit(leaf[0], leaf[1], offset, node.stat.mzxid))
