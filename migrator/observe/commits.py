"""The history of a group's ZooKeeper offset commits, as the observer sees them.

Each commit is the offset node's value with its `mzxid`, the server's order of writes: a commit and an
owner node's creation (`OwnerInterval.czxid`) compare exactly, whatever the clocks. The watcher reads
on every change notification and at least every `poll_interval_s`; a value overwritten before it was
read is missed, which only ever makes `claimed_below_commit` explain fewer duplicates.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from kazoo.exceptions import NoNodeError

from migrator.observe.poller import ZooKeeperPoller
from migrator.zk.paths import GroupPaths


@dataclass(frozen=True, slots=True)
class Commit:
    """`offset` (the next record to process) stored for topic-partition by the write `mzxid`."""

    topic: str
    partition: int
    offset: int
    mzxid: int


class CommitsWatcher(ZooKeeperPoller):
    """Record every observed write of one group's `/offsets` nodes; a context manager, like `OwnersWatcher`."""

    def __init__(self, zookeeper: str, group: str, poll_interval_s: float = 0.02) -> None:
        super().__init__(zookeeper, f"commits-watcher-{group}", poll_interval_s)
        self._paths = GroupPaths(group)
        self._seen: dict[tuple[str, int], int] = {}  # topic-partition -> last mzxid recorded
        self._commits: list[Commit] = []
        self._lock = threading.Lock()

    def commits(self) -> list[Commit]:
        """Every recorded commit, in ZooKeeper's order."""
        with self._lock:
            return sorted(self._commits, key=lambda c: c.mzxid)

    def _read(self) -> None:
        zk, paths, watch = self._zk, self._paths, self._on_watch
        try:
            topics = zk.get_children(paths.offsets, watch=watch)
        except NoNodeError:
            zk.exists(paths.offsets, watch=watch)
            return
        kids = {t: zk.get_children_async(paths.offsets_topic(t), watch=watch) for t in topics}
        reads = []
        for topic, result in kids.items():
            try:
                partitions = result.get()
            except NoNodeError:
                continue
            for p in (int(p) for p in partitions if p.isdigit()):
                reads.append((topic, p, zk.get_async(paths.offset(topic, p), watch=watch)))
        for topic, partition, result in reads:
            try:
                data, stat = result.get()
                offset = int(data)
            except (NoNodeError, ValueError):
                continue
            with self._lock:
                if self._seen.get((topic, partition)) != stat.mzxid:
                    self._seen[(topic, partition)] = stat.mzxid
                    self._commits.append(Commit(topic, partition, offset, stat.mzxid))
