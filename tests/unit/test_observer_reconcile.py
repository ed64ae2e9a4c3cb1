"""The observer's periodic read of the whole subtree delivers what its tree cache missed, and nothing the cache
delivered meanwhile (no ZooKeeper needed: reads and cache events are fed to a watcher that never starts)."""

from __future__ import annotations

from kazoo.protocol.states import ZnodeStat
from kazoo.recipe.cache import NodeData, TreeEvent

from migrator.observe.owners import OwnersWatcher
from migrator.observe.poller import Leaf
from migrator.zk.paths import GroupPaths

S = 1_000_000_000
GROUP, TOPIC = "g", "t"
PATH = GroupPaths(GROUP).owner(TOPIC, 4)
LEAF: Leaf = (TOPIC, 4)


def node(owner: str, czxid: int, ctime_s: float) -> NodeData:
    ms = int(ctime_s * 1000)
    stat = ZnodeStat(czxid, czxid, ms, ms, 0, 0, 0, 0, len(owner), 0, czxid)
    return NodeData.make(PATH, owner.encode(), stat)


def watcher_at(now_s: float) -> OwnersWatcher:
    return OwnersWatcher("127.0.0.1:1", GROUP, clock=lambda: int(now_s * S))  # never started: no connection


def cache_delivers(watcher: OwnersWatcher, kind: int, data: NodeData) -> None:
    watcher._deliver(TreeEvent.make(kind, data))


def test_a_handover_the_cache_missed_is_read_and_dated_by_the_new_nodes_creation() -> None:
    """The cache saw b1-0 take partition 4 and then nothing; the read finds b2-0's node, created at 55 s: b1-0's
    ownership ends when the read learnt it (never earlier than the real deletion) and b2-0's starts at its ctime."""
    watcher = watcher_at(21.0)
    cache_delivers(watcher, TreeEvent.NODE_ADDED, node("g_b1-0", 275, 21.0))
    watcher._clock = lambda: 56 * S
    watcher._reconcile({PATH: (LEAF, node("g_b2-0", 900, 55.0))}, dict(watcher._deliveries))
    owners = {(iv.owner, iv.start_ns, iv.end_ns) for iv in watcher.intervals()}
    assert owners == {("g_b1-0", 21 * S, 56 * S), ("g_b2-0", 55 * S, None)}


def test_a_deletion_the_cache_missed_ends_the_ownership_when_the_read_learnt_it() -> None:
    watcher = watcher_at(21.0)
    cache_delivers(watcher, TreeEvent.NODE_ADDED, node("g_b1-0", 275, 21.0))
    watcher._clock = lambda: 40 * S
    watcher._reconcile({}, dict(watcher._deliveries))
    assert [(iv.owner, iv.end_ns) for iv in watcher.intervals()] == [("g_b1-0", 40 * S)]


def test_a_read_that_agrees_with_the_cache_changes_nothing() -> None:
    watcher = watcher_at(21.0)
    cache_delivers(watcher, TreeEvent.NODE_ADDED, node("g_b1-0", 275, 21.0))
    before = watcher.intervals()
    watcher._reconcile({PATH: (LEAF, node("g_b1-0", 275, 21.0))}, dict(watcher._deliveries))
    assert watcher.intervals() == before


def test_a_node_the_cache_delivered_during_the_read_is_left_to_the_cache() -> None:
    """The read began before the cache delivered b1-0's deletion, so it still shows the node: applying it would
    bring back an ownership that has ended."""
    watcher = watcher_at(21.0)
    cache_delivers(watcher, TreeEvent.NODE_ADDED, node("g_b1-0", 275, 21.0))
    before_read = dict(watcher._deliveries)
    watcher._clock = lambda: 30 * S
    cache_delivers(watcher, TreeEvent.NODE_REMOVED, node("g_b1-0", 275, 21.0))
    watcher._reconcile({PATH: (LEAF, node("g_b1-0", 275, 21.0))}, before_read)
    assert [(iv.owner, iv.end_ns) for iv in watcher.intervals()] == [("g_b1-0", 30 * S)]
