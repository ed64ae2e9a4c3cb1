"""`ZooKeeperTree`: how the observer's watchers follow a subtree of a group (`owners`, `offsets`).

Each watcher keeps kazoo's `TreeCache` on the subtree, on a client of its own: the cache holds a watch on every
node and delivers each addition, update and removal with the node's data and stat (so a watcher dates what it
sees by the server's `ctime`, `mtime` and zxids). A watcher sees the partition nodes, `<root>/<topic>/<partition>`,
in the order the cache delivers them.

The cache alone is not relied on to stay complete: it handles watch events and the results of its own reads on
different threads, so a change lost between them (or a watch lost with a connection) would never be delivered.
So the watcher also reads the whole subtree every `RECONCILE_S` and delivers what the cache missed: a node
whose incarnation or last write (czxid, mzxid) differs from what was last delivered for it, or that appeared
or vanished. A path the cache delivered while the read was under way is left to the cache (the read may
predate it). Every such correction is logged at WARNING with the node, so a missed change is visible.

It never writes to ZooKeeper. `TreeCache.start` creates its root when the root is absent, so the cache starts
only once the root exists (a watch on the root says when). `stop` ends with a fresh read of the subtree, so
results end with what is there.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Self

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import EventType, WatchedEvent
from kazoo.recipe.cache import NodeData, TreeCache, TreeEvent

from migrator.zk.client import connect

log = logging.getLogger(__name__)

INITIAL_READ_TIMEOUT_S = 10.0
"""How long `start` waits for the cache's first full read of the subtree."""

RECONCILE_S = 1.0
"""How often the whole subtree is read to deliver what the cache missed."""

READ_TIMEOUT_S = 10.0
"""How long one full read of the subtree may take before that round is skipped."""

Leaf = tuple[str, int]
"""(topic, partition) of a partition node."""

Version = tuple[int, int]
"""(czxid, mzxid) of a node: its incarnation and its last write."""


class ZooKeeperTree:
    """Use as a context manager or `start()` / `stop()`. Subclasses implement `_leaf` (which paths are partition
    nodes), `_changed` (one partition node added, updated or removed) and `_final` (the subtree as read at
    `stop`); `_changed` and `_final` run under `self._lock`."""

    def __init__(self, zookeeper: str, root: str, name: str) -> None:
        self._hosts = zookeeper
        self._zk_client: KazooClient | None = None
        self._root = root.rstrip("/")
        self._name = name
        self._lock = threading.Lock()  # results, and one change applied at a time
        self._cache: TreeCache | None = None
        self._cache_lock = threading.Lock()  # the cache starts once, and never after stop
        self._stopping = False
        self._stopped = threading.Event()
        self._delivered: dict[str, Version] = {}  # path -> version last handed to `_changed`
        self._deliveries: dict[str, int] = {}  # path -> how many times the cache delivered it
        self._reconciler = threading.Thread(target=self._reconcile_loop, name=f"{name}-reconcile", daemon=True)

    def start(self) -> Self:
        self._zk_client = connect(self._hosts, timeout_s=10.0, session_timeout_s=10.0)
        if self._zk.exists(self._root, watch=self._on_root) is not None:
            self._start_cache()
        self._reconciler.start()
        return self

    def stop(self) -> None:
        with self._cache_lock:
            if self._stopping:
                return
            self._stopping = True
        self._stopped.set()
        with self._lock:
            pass  # a change being applied finishes first; later ones (cache or reconciliation) are dropped
        if self._cache is not None:
            self._cache.close()
        try:
            nodes = self._read_tree()
            with self._lock:
                self._final(nodes)
        except Exception:
            log.warning("%s: final read failed", self._name, exc_info=True)
        self._zk.stop()
        self._zk.close()

    @property
    def _zk(self) -> KazooClient:
        """The watcher's own client (`zk.client.connect`: it reconnects at most a second apart, so after
        ZooKeeper returns from an outage the watcher is not left blind for long)."""
        assert self._zk_client is not None, "start() first"
        return self._zk_client

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- hooks ---------------------------------------------------------------------------------------
    def _leaf(self, path: str) -> Leaf | None:
        """(topic, partition) if `path` is a partition node of the subtree, else None."""
        parts = path[len(self._root) + 1 :].split("/") if path.startswith(self._root + "/") else []
        return (parts[0], int(parts[1])) if len(parts) == 2 and parts[1].isdigit() else None

    def _changed(self, leaf: Leaf, path: str, node: NodeData | None) -> None:
        """Partition node `path` was added or updated (`node`: its data and stat) or removed (None)."""
        raise NotImplementedError

    def _final(self, nodes: Mapping[str, tuple[Leaf, NodeData]]) -> None:
        """Every partition node of the subtree, by path, as read at `stop`."""
        raise NotImplementedError

    # -- the cache -----------------------------------------------------------------------------------
    def _on_root(self, event: WatchedEvent) -> None:
        """The root was created: start the cache off kazoo's callback thread (starting it makes calls)."""
        if event.type == EventType.CREATED:
            threading.Thread(target=self._start_cache, name=f"{self._name}-start", daemon=True).start()

    def _start_cache(self) -> None:
        with self._cache_lock:
            if self._stopping or self._cache is not None:
                return
            self._cache = self._started_cache()

    def _started_cache(self) -> TreeCache:
        """A started cache of the subtree whose first full read is done (or `INITIAL_READ_TIMEOUT_S` passed)."""
        cache = TreeCache(self._zk, self._root)
        initialized = threading.Event()

        def listener(event: TreeEvent) -> None:
            if event.event_type == TreeEvent.INITIALIZED:
                initialized.set()
            elif event.event_type in _NODE_EVENTS:
                self._deliver(event)

        cache.listen(listener)
        cache.start()
        if not initialized.wait(INITIAL_READ_TIMEOUT_S):
            log.warning("%s: no full read of %s within %.0f s", self._name, self._root, INITIAL_READ_TIMEOUT_S)
        return cache

    def _deliver(self, event: TreeEvent) -> None:
        data: NodeData = event.event_data
        leaf = self._leaf(data.path)
        if leaf is None:
            return
        node = None if event.event_type == TreeEvent.NODE_REMOVED else data
        with self._lock:
            if not self._stopping:
                self._deliveries[data.path] = self._deliveries.get(data.path, 0) + 1
                self._hand_over(leaf, data.path, node)

    def _hand_over(self, leaf: Leaf, path: str, node: NodeData | None) -> None:
        """`_changed`, noting the version handed over (under `self._lock`)."""
        if node is None:
            self._delivered.pop(path, None)
        else:
            self._delivered[path] = (node.stat.czxid, node.stat.mzxid)
        self._changed(leaf, path, node)

    # -- the reconciliation --------------------------------------------------------------------------
    def _reconcile_loop(self) -> None:
        while not self._stopped.wait(RECONCILE_S):
            with self._lock:
                before = dict(self._deliveries)
            try:
                nodes = self._read_tree()
            except Exception as exc:  # ZooKeeper unreachable meanwhile: the next round reads again
                log.debug("%s: reconciling read failed: %r", self._name, exc)
                continue
            with self._lock:
                if not self._stopping:
                    self._reconcile(nodes, before)

    def _reconcile(self, nodes: Mapping[str, tuple[Leaf, NodeData]], before: Mapping[str, int]) -> None:
        """Deliver what `nodes` (read after the cache had delivered `before`) shows the cache missed."""
        for path in sorted(set(self._delivered) | set(nodes)):
            if self._deliveries.get(path, 0) != before.get(path, 0):
                continue  # the cache spoke of it during the read: it is newer than the read
            read = nodes.get(path)
            version = None if read is None else (read[1].stat.czxid, read[1].stat.mzxid)
            if version == self._delivered.get(path):
                continue
            log.warning("%s: the tree cache missed a change of %s (delivered %s, read %s)",
                        self._name, path, self._delivered.get(path), version)  # fmt: skip
            leaf = read[0] if read is not None else self._leaf(path)
            if leaf is not None:
                self._hand_over(leaf, path, None if read is None else read[1])

    def _read_tree(self) -> dict[str, tuple[Leaf, NodeData]]:
        """Every partition node of the subtree now, with its stat: one pipelined read per level."""
        try:
            topics = self._zk.get_children_async(self._root).get(timeout=READ_TIMEOUT_S)
        except NoNodeError:
            return {}
        listings = {t: self._zk.get_children_async(f"{self._root}/{t}") for t in topics}
        reads = {}
        for topic, listing in listings.items():
            try:
                children = listing.get(timeout=READ_TIMEOUT_S)
            except NoNodeError:
                continue
            for child in children:
                path = f"{self._root}/{topic}/{child}"
                if self._leaf(path) is not None:
                    reads[path] = self._zk.get_async(path)
        nodes: dict[str, tuple[Leaf, NodeData]] = {}
        for path, read in reads.items():
            try:
                data, stat = read.get(timeout=READ_TIMEOUT_S)
            except NoNodeError:
                continue
            leaf = self._leaf(path)
            assert leaf is not None
            nodes[path] = (leaf, NodeData.make(path, data, stat))
        return nodes


_NODE_EVENTS = (TreeEvent.NODE_ADDED, TreeEvent.NODE_UPDATED, TreeEvent.NODE_REMOVED)
