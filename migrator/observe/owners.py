"""`OwnersWatcher`: a read-only timeline of `/consumers/<group>/owners/<topic>/<partition>`.

How it catches every change: children watches on `owners` and each `owners/<topic>`, and data watches on
each partition node, re-armed by a full pipelined re-read after every notification; a fallback re-read
every `poll_interval_s` covers anything a watch could not (e.g. the watcher's own reconnects).

How it dates them, so that checks against processing times err towards *no* false alarm:
- an ownership starts at the node's `ctime` (set by the ZooKeeper server, wall clock, ms): the exact
  claim time, however late we read it. This needs the server on the same host as the processes (or
  synchronised clocks); pass `use_server_ctime=False` to date starts by our own observation instead.
- an ownership ends when we learn the node is gone (the DELETED notification, else the re-read): never
  earlier than the real deletion.
- a node first read after its creator rewrote it in place (a bridge moving a partition between its own
  threads, `mtime > ctime`) held what we read only since `mtime`; before that it held one of the same
  member's threads, which one we cannot know, so that stretch is a `member_only` interval. Likewise a node
  rewritten since our last read (a new `mtime`): from that read to the `mtime`, threads of the same member may
  have held it in turn (moved away and back, unseen while our client was reconnecting), so that stretch is a
  `member_only` interval too.

Each node incarnation (czxid) is one `OwnerInterval`, so a node re-created by the same thread is a new
interval. The watcher only calls `get`, `get_children` and `exists`: it never writes to ZooKeeper. Its read loop
is `poller.ZooKeeperPoller`, shared with `CommitsWatcher`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import WatchedEvent

from migrator.observe.poller import ZooKeeperPoller
from migrator.protocol.partition import TopicPartition
from migrator.zk.paths import GroupPaths


@dataclass(frozen=True, slots=True)
class OwnerInterval:
    """Thread `owner` held the owner node of (topic, partition) from `start_ns` to `end_ns` (None: still).
    `member_only`: `owner` is a consumer id, and some thread of it held the node (see the module's notes)."""

    topic: str
    partition: int
    owner: str
    start_ns: int
    end_ns: int | None = None
    czxid: int = 0
    member_only: bool = False

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def member(self) -> str:
        """The owning consumer id (a thread id is `<consumerId>-<n>`)."""
        return self.owner if self.member_only else self.owner.rsplit("-", 1)[0]

    def held_by(self, thread_id: str) -> bool:
        """Whether thread `thread_id` may be the one that held the node."""
        return thread_id.rsplit("-", 1)[0] == self.owner if self.member_only else thread_id == self.owner


@dataclass(frozen=True, slots=True)
class OwnerEvent:
    """At `time_ns` the owner of (topic, partition) became `owner` (None: no owner node)."""

    time_ns: int
    topic: str
    partition: int
    owner: str | None


class OwnersWatcher(ZooKeeperPoller):
    """Watch one group's owner nodes; use as a context manager or `start()` / `stop()`."""

    def __init__(
        self,
        zookeeper: str,
        group: str,
        poll_interval_s: float = 0.25,
        use_server_ctime: bool = True,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        super().__init__(zookeeper, f"owners-watcher-{group}", poll_interval_s)
        self._paths = GroupPaths(group)
        self._use_ctime = use_server_ctime
        self._clock = clock
        self._lock = threading.Lock()
        self._open: dict[str, OwnerInterval] = {}  # owner node path -> its live interval
        self._closed: list[OwnerInterval] = []
        self._events: list[OwnerEvent] = []
        self._deleted_at: dict[str, int] = {}  # path -> time of its DELETED notification
        self._last_event: dict[tuple[str, int], int] = {}
        self._last_read: dict[str, tuple[int, int]] = {}  # path -> (mtime in ms, when) at our last read of it

    # -- results -------------------------------------------------------------------------------------
    @property
    def timeline(self) -> list[OwnerEvent]:
        """Every observed change, in time order (per partition the order is also observation order)."""
        with self._lock:
            return sorted(self._events, key=lambda e: e.time_ns)

    def intervals(self) -> list[OwnerInterval]:
        """Every ownership seen so far, closed ones first; still-live ones have `end_ns=None`."""
        with self._lock:
            return list(self._closed) + list(self._open.values())

    def current(self) -> dict[TopicPartition, str]:
        """The owners as of the last read."""
        with self._lock:
            return {iv.topic_partition: iv.owner for iv in self._open.values()}

    def refresh(self) -> dict[TopicPartition, str]:
        """Read now (not waiting for a notification) and return the current owners."""
        self._scan()
        return self.current()

    # -- machinery -----------------------------------------------------------------------------------
    def _on_watch(self, event: WatchedEvent) -> None:
        if event.type == "DELETED" and event.path:
            now = self._clock()
            with self._lock:
                self._deleted_at.setdefault(event.path, now)
        super()._on_watch(event)

    def _read(self) -> None:
        """One pipelined read of the whole owners tree, re-arming every watch, then a diff."""
        zk, paths, watch = self._zk, self._paths, self._on_watch
        if zk.exists(paths.owners, watch=watch) is None:
            topics: list[str] = []
        else:
            try:
                topics = zk.get_children(paths.owners, watch=watch)
            except NoNodeError:
                topics = []
        kids = {t: zk.get_children_async(paths.owners_topic(t), watch=watch) for t in topics}
        reads = {}
        for topic, result in kids.items():
            try:
                partitions = result.get()
            except NoNodeError:
                continue
            for p in partitions:
                if p.isdigit():
                    reads[paths.owner(topic, int(p))] = (
                        topic,
                        int(p),
                        zk.get_async(paths.owner(topic, int(p)), watch=watch),
                    )
        seen: dict[str, tuple[str, int, str, int, int, int]] = {}
        for path, (topic, partition, result) in reads.items():
            try:
                data, stat = result.get()
            except NoNodeError:
                continue
            owner = (data or b"").decode("utf-8", "replace")
            seen[path] = (topic, partition, owner, stat.czxid, stat.ctime, stat.mtime)
        self._diff(seen, self._clock())

    def _diff(self, seen: dict[str, tuple[str, int, str, int, int, int]], now: int) -> None:
        with self._lock:
            for path, iv in list(self._open.items()):
                current = seen.get(path)
                if current is not None and current[3] == iv.czxid:
                    self._note_rewrites(path, iv, current[5], now)
                    if current[2] != iv.owner:  # handed to another thread of the same member, in place
                        at = min(now, current[5] * 1_000_000) if self._use_ctime else now
                        self._close(path, iv, at)
                        self._add(path, current, at, use_ctime=False)
                    continue
                deleted = self._deleted_at.get(path, now)
                self._close(path, iv, min(deleted, now))
            for path, current in seen.items():
                if path not in self._open:
                    self._add(path, current, now, use_ctime=self._use_ctime)
            self._deleted_at.clear()  # a notification racing this read only makes a later end (conservative)
            self._last_read = {path: (current[5], now) for path, current in seen.items()}

    def _note_rewrites(self, path: str, iv: OwnerInterval, mtime_ms: int, now: int) -> None:
        """Under `_lock`: a node of the same incarnation rewritten since our last read was held, from that read
        to its `mtime`, by threads of its member we did not see: a `member_only` interval."""
        last = self._last_read.get(path)
        if last is None or last[0] == mtime_ms:
            return
        rewritten = min(now, mtime_ms * 1_000_000)
        if rewritten > last[1]:
            self._closed.append(OwnerInterval(iv.topic, iv.partition, iv.member, last[1], rewritten, iv.czxid,
                                              member_only=True))  # fmt: skip

    def _close(self, path: str, iv: OwnerInterval, end_ns: int) -> None:
        del self._open[path]
        self._closed.append(replace(iv, end_ns=max(end_ns, iv.start_ns)))
        self._events.append(OwnerEvent(self._event_time(iv.topic, iv.partition, end_ns), iv.topic, iv.partition, None))

    def _add(self, path: str, current: tuple[str, int, str, int, int, int], now: int, use_ctime: bool) -> None:
        topic, partition, owner, czxid, ctime_ms, mtime_ms = current
        start = min(now, ctime_ms * 1_000_000) if use_ctime else now
        if use_ctime and mtime_ms > ctime_ms:  # rewritten in place before we first read it
            rewritten = min(now, mtime_ms * 1_000_000)
            member = owner.rsplit("-", 1)[0]
            self._closed.append(OwnerInterval(topic, partition, member, start, rewritten, czxid, member_only=True))
            self._events.append(OwnerEvent(self._event_time(topic, partition, start), topic, partition, member))
            start = rewritten
        self._open[path] = OwnerInterval(topic, partition, owner, start, None, czxid)
        self._events.append(OwnerEvent(self._event_time(topic, partition, start), topic, partition, owner))

    def _event_time(self, topic: str, partition: int, wanted: int) -> int:
        """Keep each partition's events in observation order even when a ctime predates a seen deletion."""
        at = max(wanted, self._last_event.get((topic, partition), 0))
        self._last_event[(topic, partition)] = at
        return at
