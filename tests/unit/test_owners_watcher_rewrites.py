"""`OwnersWatcher` dating of owner nodes rewritten in place between two of its reads (no ZooKeeper needed: the
changes are fed to it as its tree cache delivers them)."""

from __future__ import annotations

from migrator.observe.owners import OwnersWatcher, _Node
from migrator.observe.records import Processed
from migrator.observe.verdict import owner_violations
from migrator.zk.paths import GroupPaths

S = 1_000_000_000
GROUP, TOPIC = "g", "t"
PATH = GroupPaths(GROUP).owner(TOPIC, 0)


def seen(watcher: OwnersWatcher, owner: str, mtime_s: float, now: int) -> None:
    """The owner node of partition 0 as seen at `now`: created at 0.5 s (czxid 7), last written at `mtime_s`."""
    watcher._update(PATH, _Node(TOPIC, 0, owner, 7, 500, int(mtime_s * 1000), False), now)


def processed(thread: str, start_s: float, end_s: float) -> Processed:
    return Processed(thread.rsplit("-", 1)[0], thread, TOPIC, 0, 0, int(start_s * S), int(end_s * S))


def test_a_node_moved_away_and_back_between_two_reads_was_held_by_the_member_meanwhile() -> None:
    """A bridge may move a partition to another of its threads and back while the observer's client is
    reconnecting (a ZooKeeper restart): both reads see the first thread, only the mtime changed. The threads of
    that member are credited for the stretch; nobody else is."""
    watcher = OwnersWatcher("127.0.0.1:1", GROUP)  # never started: no connection
    seen(watcher, "g_b2-0", 0.5, 1 * S)
    seen(watcher, "g_b2-0", 3.0, 5 * S)
    ownership = watcher.intervals()
    assert not owner_violations(ownership, [processed("g_b2-1", 2.0, 2.5), processed("g_b2-0", 3.5, 4.0)])
    assert owner_violations(ownership, [processed("g_b1-0", 2.0, 2.5)])
    assert owner_violations(ownership, [processed("g_b2-1", 3.5, 4.0)])  # after the mtime: b2-0's again


def test_an_unchanged_node_credits_only_its_thread() -> None:
    watcher = OwnersWatcher("127.0.0.1:1", GROUP)
    seen(watcher, "g_b2-0", 0.5, 1 * S)
    seen(watcher, "g_b2-0", 0.5, 5 * S)
    assert owner_violations(watcher.intervals(), [processed("g_b2-1", 2.0, 2.5)])
