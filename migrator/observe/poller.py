"""`ZooKeeperTree`: how the observer's watchers follow a subtree of a group (`owners`, `offsets`).

Each watcher keeps kazoo's `TreeCache` on the subtree, on a client of its own: the cache holds a watch on every
node and delivers each addition, update and removal with the node's data and stat (so a watcher dates what it
sees by the server's `ctime`, `mtime` and zxids), and reads the whole subtree again after a reconnect. A
watcher sees the partition nodes, `<root>/<topic>/<partition>`, in the order the cache delivers them.

It never writes to ZooKeeper. `TreeCache.start` creates its root when the root is absent, so the cache starts
only once the root exists (a watch on the root says when). `stop` ends with a fresh read of the subtree, so
results end with what is there.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Self

from kazoo.client import KazooClient
from kazoo.protocol.states import EventType, WatchedEvent
from kazoo.recipe.cache import NodeData, TreeCache, TreeEvent

log = logging.getLogger(__name__)

INITIAL_READ_TIMEOUT_S = 10.0
"""How long `start` and `stop` wait for a cache's first full read of the subtree."""

Leaf = tuple[str, int]
"""(topic, partition) of a partition node."""


class ZooKeeperTree:
    """Use as a context manager or `start()` / `stop()`. Subclasses implement `_changed` (one partition node
    added, updated or removed) and `_final` (the subtree as read at `stop`); both run under `self._lock`."""

    def __init__(self, zookeeper: str, root: str, name: str) -> None:
        self._zk = KazooClient(hosts=zookeeper, timeout=10.0)
        self._root = root.rstrip("/")
        self._name = name
        self._lock = threading.Lock()  # results, and one change applied at a time
        self._cache: TreeCache | None = None
        self._cache_lock = threading.Lock()  # the cache starts once, and never after stop
        self._stopping = False

    def start(self) -> Self:
        self._zk.start(timeout=10.0)
        if self._zk.exists(self._root, watch=self._on_root) is not None:
            self._start_cache()
        return self

    def stop(self) -> None:
        with self._cache_lock:
            if self._stopping:
                return
            self._stopping = True
        with self._lock:
            pass  # a change being applied finishes first; later ones are dropped (`_deliver`)
        if self._cache is not None:
            self._cache.close()
        try:
            nodes = self._read_once()
            with self._lock:
                self._final(nodes)
        except Exception:
            log.warning("%s: final read failed", self._name, exc_info=True)
        self._zk.stop()
        self._zk.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- hooks ---------------------------------------------------------------------------------------
    def _changed(self, leaf: Leaf, path: str, node: NodeData | None) -> None:
        """Partition node `path` was added or updated (`node`: its data and stat) or removed (None)."""
        raise NotImplementedError

    def _final(self, nodes: Mapping[str, tuple[Leaf, NodeData]]) -> None:
        """Every partition node of the subtree, by path, as read at `stop`."""
        raise NotImplementedError

    # -- machinery -----------------------------------------------------------------------------------
    def _leaf(self, path: str) -> Leaf | None:
        parts = path[len(self._root) + 1 :].split("/") if path.startswith(self._root + "/") else []
        return (parts[0], int(parts[1])) if len(parts) == 2 and parts[1].isdigit() else None

    def _on_root(self, event: WatchedEvent) -> None:
        """The root was created: start the cache off kazoo's callback thread (starting it makes calls)."""
        if event.type == EventType.CREATED:
            threading.Thread(target=self._start_cache, name=f"{self._name}-start", daemon=True).start()

    def _start_cache(self) -> None:
        with self._cache_lock:
            if self._stopping or self._cache is not None:
                return
            self._cache = self._started_cache(self._deliver)

    def _started_cache(self, deliver: Callable[[TreeEvent], None] | None) -> TreeCache:
        """A started cache of the subtree whose first full read is done (or `INITIAL_READ_TIMEOUT_S` passed)."""
        cache = TreeCache(self._zk, self._root)
        initialized = threading.Event()

        def listener(event: TreeEvent) -> None:
            if event.event_type == TreeEvent.INITIALIZED:
                initialized.set()
            elif deliver is not None and event.event_type in _NODE_EVENTS:
                deliver(event)

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
        with self._lock:
            if not self._stopping:
                self._changed(leaf, data.path, None if event.event_type == TreeEvent.NODE_REMOVED else data)

    def _read_once(self) -> dict[str, tuple[Leaf, NodeData]]:
        """Every partition node of the subtree now, with its stat (a cache read once, then closed)."""
        if self._zk.exists(self._root) is None:
            return {}
        cache = self._started_cache(None)
        try:
            nodes: dict[str, tuple[Leaf, NodeData]] = {}
            for topic in cache.get_children(self._root, frozenset()):
                for partition in cache.get_children(f"{self._root}/{topic}", frozenset()):
                    path = f"{self._root}/{topic}/{partition}"
                    leaf, data = self._leaf(path), cache.get_data(path)
                    if leaf is not None and data is not None:
                        nodes[path] = (leaf, data)
            return nodes
        finally:
            cache.close()


_NODE_EVENTS = (TreeEvent.NODE_ADDED, TreeEvent.NODE_UPDATED, TreeEvent.NODE_REMOVED)
