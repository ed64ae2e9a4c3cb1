"""The history of a group's ZooKeeper offset commits, as the observer sees them.

Each commit is the offset node's value with its `mzxid`, the server's order of writes: a commit and an
owner node's creation (`OwnerInterval.czxid`) compare exactly, whatever the clocks. The watcher reads
on every change notification and at least every `poll_interval_s`; a value overwritten before it was
read is missed, which only ever makes `claimed_below_commit` explain fewer duplicates.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.protocol.states import WatchedEvent

from migrator.zk.paths import GroupPaths

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Commit:
    """`offset` (the next record to process) stored for topic-partition by the write `mzxid`."""

    topic: str
    partition: int
    offset: int
    mzxid: int


class CommitsWatcher:
    """Record every observed write of one group's `/offsets` nodes; a context manager, like `OwnersWatcher`."""

    def __init__(self, zookeeper: str, group: str, poll_interval_s: float = 0.02) -> None:
        self._paths = GroupPaths(group)
        self._zk = KazooClient(hosts=zookeeper, timeout=10.0)
        self._poll_s = poll_interval_s
        self._seen: dict[tuple[str, int], int] = {}  # topic-partition -> last mzxid recorded
        self._commits: list[Commit] = []
        self._lock = threading.Lock()
        self._dirty = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"commits-watcher-{group}", daemon=True)

    def __enter__(self) -> CommitsWatcher:
        self._zk.start(timeout=10.0)
        self._scan()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._dirty.set()
        self._thread.join(timeout=5.0)
        try:
            self._scan()
        except KazooException:
            log.warning("commits watcher: final read failed", exc_info=True)
        self._zk.stop()
        self._zk.close()

    def commits(self) -> list[Commit]:
        """Every recorded commit, in ZooKeeper's order."""
        with self._lock:
            return sorted(self._commits, key=lambda c: c.mzxid)

    def _on_watch(self, _event: WatchedEvent) -> None:
        self._dirty.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._dirty.wait(self._poll_s)
            self._dirty.clear()
            try:
                self._scan()
            except KazooException:
                log.debug("commits watcher: read failed; retrying", exc_info=True)

    def _scan(self) -> None:
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
