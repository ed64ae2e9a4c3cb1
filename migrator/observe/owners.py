"""`OwnersWatcher`: a read-only timeline of `/consumers/<group>/owners/<topic>/<partition>` (and of pykafka's
`owners/<folder>/<leader>-<partition>` nodes, which hold a consumer id: `member_only` intervals).

How it catches every change: a kazoo `TreeCache` of `owners` (`poller.ZooKeeperTree`, shared with
`CommitsWatcher`) delivers each owner node's creation, rewrite and deletion with the node's stat, and a read
of the whole tree every second delivers what the cache missed.

How it dates them, so that checks against processing times err towards *no* false alarm:
- an ownership starts at the node's `ctime` (set by the ZooKeeper server, wall clock, ms): the exact
  claim time, however late we learn of it. This needs the server on the same host as the processes (or
  synchronised clocks); pass `use_server_ctime=False` to date starts by our own observation instead.
- an ownership ends when we learn the node is gone (the cache's removal, else the final read at `stop`):
  never earlier than the real deletion.
- a node first seen after its creator rewrote it in place (a bridge moving a partition between its own
  threads, `mtime > ctime`) held what we read only since `mtime`; before that it held one of the same
  member's threads, which one we cannot know, so that stretch is a `member_only` interval. Likewise a node
  rewritten since we last saw it (a new `mtime`, same owner): from then to the `mtime`, threads of the same
  member may have held it in turn (moved away and back while our client was reconnecting), so that stretch is a
  `member_only` interval too.

Each node incarnation (czxid) is one `OwnerInterval`, so a node re-created by the same thread is a new
interval. The watcher only reads: it never writes to ZooKeeper.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from kazoo.recipe.cache import NodeData

from migrator.observe.poller import Leaf, ZooKeeperTree
from migrator.protocol.partition import TopicPartition
from migrator.protocol.pykafka_layout import OwnerNode, spelling_of_folder
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


@dataclass(frozen=True, slots=True)
class _Node:
    """One owner node as read: who holds it, and its incarnation and times (server ms)."""

    topic: str
    partition: int
    owner: str
    czxid: int
    ctime_ms: int
    mtime_ms: int
    member_only: bool

    @classmethod
    def of(cls, leaf: Leaf, data: NodeData) -> _Node:
        owner = (data.data or b"").decode("utf-8", "replace")
        member_only = not data.path.rsplit("/", 1)[-1].isdigit()  # a pykafka node names the member
        return cls(leaf[0], leaf[1], owner, data.stat.czxid, data.stat.ctime, data.stat.mtime, member_only)


def _owner_node(folder: str, child: str) -> Leaf | None:
    """(topic, partition) of `owners/<folder>/<child>`: Scala's `<topic>/<partition>` holding a thread id, or
    pykafka's `<folder>/<leader>-<partition>` holding a consumer id; None for anything else."""
    if child.isdigit():
        return folder, int(child)
    node = OwnerNode.parse(child)
    spelt = spelling_of_folder(folder)
    if node is None or spelt is None:
        return None
    return spelt[0], node.partition


class OwnersWatcher(ZooKeeperTree):
    """Watch one group's owner nodes; use as a context manager or `start()` / `stop()`."""

    def __init__(
        self,
        zookeeper: str,
        group: str,
        use_server_ctime: bool = True,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        super().__init__(zookeeper, GroupPaths(group).owners, f"owners-watcher-{group}")
        self._use_ctime = use_server_ctime
        self._clock = clock
        self._open: dict[str, OwnerInterval] = {}  # owner node path -> its live interval
        self._closed: list[OwnerInterval] = []
        self._events: list[OwnerEvent] = []
        self._last_event: dict[tuple[str, int], int] = {}
        self._last_seen: dict[str, tuple[int, int]] = {}  # path -> (its mtime in ms, when we learnt it)

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
        """The owners as last seen."""
        with self._lock:
            return {iv.topic_partition: iv.owner for iv in self._open.values()}

    # -- machinery -----------------------------------------------------------------------------------
    def _leaf(self, path: str) -> Leaf | None:
        parts = path[len(self._root) + 1 :].split("/") if path.startswith(self._root + "/") else []
        return _owner_node(parts[0], parts[1]) if len(parts) == 2 else None

    def _changed(self, leaf: Leaf, path: str, node: NodeData | None) -> None:
        self._update(path, _Node.of(leaf, node) if node is not None else None, self._clock())

    def _final(self, nodes: Mapping[str, tuple[Leaf, NodeData]]) -> None:
        now = self._clock()
        for path in set(self._open) | set(nodes):
            self._update(path, _Node.of(*nodes[path]) if path in nodes else None, now)

    def _update(self, path: str, current: _Node | None, now: int) -> None:
        """Node `path` is `current` (None: gone) as learnt at `now`."""
        iv = self._open.get(path)
        last_seen = self._last_seen.pop(path, None)
        if current is not None:
            self._last_seen[path] = (current.mtime_ms, now)
        if iv is not None:
            if current is not None and current.czxid == iv.czxid:
                if current.owner == iv.owner:
                    self._note_rewrite(iv, last_seen, current.mtime_ms, now)
                else:  # handed to another thread of the same member, in place
                    at = min(now, current.mtime_ms * 1_000_000) if self._use_ctime else now
                    self._close(path, iv, at)
                    self._add(path, current, at, use_ctime=False)
                return
            self._close(path, iv, now)  # deleted, or deleted and created again
        if current is not None:
            self._add(path, current, now, use_ctime=self._use_ctime)

    def _note_rewrite(self, iv: OwnerInterval, last_seen: tuple[int, int] | None, mtime_ms: int, now: int) -> None:
        """A node of the same incarnation rewritten since we last saw it was held, from then to its `mtime`, by
        threads of its member we did not see: a `member_only` interval."""
        if last_seen is None or last_seen[0] == mtime_ms:
            return
        rewritten = min(now, mtime_ms * 1_000_000)
        if rewritten > last_seen[1]:
            self._closed.append(
                OwnerInterval(iv.topic, iv.partition, iv.member, last_seen[1], rewritten, iv.czxid, member_only=True)
            )

    def _close(self, path: str, iv: OwnerInterval, end_ns: int) -> None:
        del self._open[path]
        self._closed.append(replace(iv, end_ns=max(end_ns, iv.start_ns)))
        self._events.append(OwnerEvent(self._event_time(iv.topic, iv.partition, end_ns), iv.topic, iv.partition, None))

    def _add(self, path: str, node: _Node, now: int, use_ctime: bool) -> None:
        topic, partition, owner = node.topic, node.partition, node.owner
        start = min(now, node.ctime_ms * 1_000_000) if use_ctime else now
        if node.member_only:  # a pykafka owner node: it names the member, never a thread
            self._open[path] = OwnerInterval(topic, partition, owner, start, None, node.czxid, member_only=True)
            self._events.append(OwnerEvent(self._event_time(topic, partition, start), topic, partition, owner))
            return
        if use_ctime and node.mtime_ms > node.ctime_ms:  # rewritten in place before we first saw it
            rewritten = min(now, node.mtime_ms * 1_000_000)
            member = owner.rsplit("-", 1)[0]
            self._closed.append(OwnerInterval(topic, partition, member, start, rewritten, node.czxid, member_only=True))
            self._events.append(OwnerEvent(self._event_time(topic, partition, start), topic, partition, member))
            start = rewritten
        self._open[path] = OwnerInterval(topic, partition, owner, start, None, node.czxid)
        self._events.append(OwnerEvent(self._event_time(topic, partition, start), topic, partition, owner))

    def _event_time(self, topic: str, partition: int, wanted: int) -> int:
        """Keep each partition's events in observation order even when a ctime predates a seen deletion."""
        at = max(wanted, self._last_event.get((topic, partition), 0))
        self._last_event[(topic, partition)] = at
        return at
