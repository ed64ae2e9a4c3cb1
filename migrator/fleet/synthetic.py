"""Synthetic consumer groups in a real ZooKeeper, for fleet-scan tests and benchmarks.

Members and owners are ephemeral nodes of the caller's session, exactly like real connectors, so the
fleet exists only while the session that wrote it lives (a test's client, or `scripts/make_fleet.py`
until it is told to stop). Writes are pipelined per tree level (`migrator.zk.bulk`): thousands of
groups take seconds, not minutes.

Every shape knows the status the fleet scan must give it when Kafka is not consulted (no bootstrap
servers), which makes a large fleet a check of the classification against real znodes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from migrator.fleet.model import Status
from migrator.protocol.codecs import Authority, PublishedAuthority, Registration, encode_offset, encode_owner
from migrator.zk.bulk import PipelinedCreates, remove_trees
from migrator.zk.paths import CONSUMERS, GroupPaths
from migrator.zk.session import ZkSession, children, ensure_path

TOPICS = {"fleet-orders": 4, "fleet-payments": 2, "fleet-clicks": 8}
BATCH_GROUPS = 500

# shape name -> (weight, status expected without Kafka facts, reason code expected)
SHAPES: dict[str, tuple[int, Status, str]] = {
    "legacy": (30, Status.LEGACY, "legacy-members"),
    "migrating": (20, Status.MIGRATING, "legacy-members"),
    "bridges": (20, Status.BLOCKED, "kafka-unchecked"),
    "bridges-mode-zookeeper": (5, Status.BLOCKED, "kafka-unchecked"),
    "bridges-mode-kafka": (8, Status.BLOCKED, "not-converged"),
    "bridges-silent": (3, Status.BLOCKED, "no-authority-published"),
    "orphaned": (5, Status.ORPHANED, "no-members"),
    "stale-owner": (3, Status.INCONSISTENT, "stale-owner"),
    "corrupt-member": (3, Status.BLOCKED, "corrupt-member"),
    "unknown-mode": (2, Status.BLOCKED, "unknown-mode"),
    "legacy-corrupt": (1, Status.LEGACY, "corrupt-member"),
}


@dataclass(frozen=True, slots=True)
class GroupShape:
    group: str
    shape: str
    legacy: tuple[str, ...]
    bridges: tuple[str, ...]
    topics: tuple[str, ...]
    mode: str | None

    @property
    def expected_status(self) -> Status:
        return SHAPES[self.shape][1]

    @property
    def expected_reason(self) -> str:
        return SHAPES[self.shape][2]


@dataclass
class SyntheticFleet:
    prefix: str
    shapes: dict[str, GroupShape] = field(default_factory=dict)

    def expected(self) -> dict[str, Status]:
        return {g: s.expected_status for g, s in self.shapes.items()}


def group_name(prefix: str, i: int) -> str:
    return f"{prefix}-{i:06d}"


def plan_fleet(n: int, prefix: str = "fleet", seed: int = 0, only: str | None = None) -> SyntheticFleet:
    """Choose the shape of each group (pure: same seed, same fleet); `only`: every group of that shape."""
    rng = random.Random(seed)
    names = list(SHAPES) if only is None else [only]
    weights = [SHAPES[s][0] for s in names]
    fleet = SyntheticFleet(prefix)
    for i in range(n):
        group = group_name(prefix, i)
        shape = rng.choices(names, weights)[0]
        k = rng.randint(2 if shape in ("legacy-corrupt", "migrating") else 1, 4)
        ids = [f"{group}_host{j}-{1700000000000 + i}-{rng.getrandbits(32):08x}" for j in range(k)]
        if shape in ("legacy", "legacy-corrupt"):
            legacy, bridges = ids, []
        elif shape == "migrating":
            cut = rng.randint(1, k - 1)
            legacy, bridges = ids[:cut], ids[cut:]
        elif shape == "orphaned":
            legacy, bridges = [], []
        else:
            legacy, bridges = [], ids
        mode = {"bridges-mode-zookeeper": "zookeeper", "bridges-mode-kafka": "kafka", "unknown-mode": "kafak"}.get(
            shape
        )
        if shape in ("legacy", "migrating") and rng.random() < 0.2:
            mode = "zookeeper"
        topics = tuple(sorted(rng.sample(sorted(TOPICS), rng.randint(1, 2))))
        fleet.shapes[group] = GroupShape(group, shape, tuple(legacy), tuple(bridges), topics, mode)
    return fleet


def _levels(shape: GroupShape, now_ms: int, rng: random.Random) -> list[list[tuple[str, bytes, bool]]]:
    """The nodes of one group, level by level (parents before children)."""
    p = GroupPaths(shape.group)
    members = list(shape.legacy) + list(shape.bridges)
    reg = {
        cid: Registration({t: rng.randint(1, 2) for t in shape.topics}, timestamp_ms=now_ms - 3_600_000)
        for cid in members
    }
    threads = sorted(f"{cid}-{i}" for cid in members for i in range(max(reg[cid].subscription.values())))
    l1 = [(p.root, b"", False)]
    l2 = [(p.ids, b"", False), (p.owners, b"", False), (p.offsets, b"", False), (p.migration, b"", False)]
    l3 = [(p.migration_ids, b"", False), (p.authority, b"", False)]
    l3 += [(p.owners_topic(t), b"", False) for t in shape.topics] + [
        (p.offsets_topic(t), b"", False) for t in shape.topics
    ]
    if shape.mode is not None:
        l3.append((p.mode, shape.mode.encode(), False))
    l4: list[tuple[str, bytes, bool]] = []
    for cid in members:
        data = reg[cid].encode()
        if shape.shape in ("corrupt-member", "legacy-corrupt") and cid == members[-1]:
            data = b'{"version":1,"subscription":'  # truncated write of a foreign client
        l4.append((p.member(cid), data, True))
    for cid in shape.bridges:
        l4.append((p.migration_member(cid), reg[cid].encode(), True))
        if shape.shape != "bridges-silent":
            authority = Authority.KAFKA if shape.mode == "kafka" else Authority.ZOOKEEPER
            pub = PublishedAuthority(authority, generation=rng.randint(1, 5), timestamp_ms=now_ms)
            l4.append((p.published_authority(cid), pub.encode(), True))
    for t in shape.topics:
        for part in range(TOPICS[t]):
            l4.append((p.offset(t, part), encode_offset(rng.randint(0, 10_000)), False))
            if threads:
                l4.append((p.owner(t, part), encode_owner(threads[part % len(threads)]), True))
        if shape.shape == "stale-owner":
            l4.append((p.owner(t, TOPICS[t] - 1), encode_owner(f"{shape.group}_gone-1-deadbeef-0"), True))
    if shape.shape == "stale-owner":  # the stale owner replaces the last partition's rightful one
        last = {p.owner(t, TOPICS[t] - 1) for t in shape.topics}
        l4 = [n for n in l4 if n[0] not in last or b"_gone-" in n[1]]
    return [l1, l2, l3, l4]


def write_fleet(
    zk: ZkSession,
    fleet: SyntheticFleet,
    now_ms: int,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> None:
    """Create every group of `fleet`; ephemeral nodes belong to `zk`'s session."""
    ensure_path(zk, CONSUMERS)
    rng = random.Random(seed)
    shapes = list(fleet.shapes.values())
    writer = PipelinedCreates(zk)
    for start in range(0, len(shapes), BATCH_GROUPS):
        batch = shapes[start : start + BATCH_GROUPS]
        levels = [_levels(s, now_ms, rng) for s in batch]
        for depth in range(4):
            for group_levels in levels:
                for path, data, ephemeral in group_levels[depth]:
                    writer.create(path, data, ephemeral)
            writer.drain()
        if progress is not None:
            progress(len(batch))


def make_fleet(
    zk: ZkSession, n: int, *, prefix: str = "fleet", seed: int = 0, now_ms: int, only: str | None = None
) -> SyntheticFleet:
    """Plan and write `n` groups named `<prefix>-000000…`; returns what each should be classified as."""
    fleet = plan_fleet(n, prefix, seed, only)
    write_fleet(zk, fleet, now_ms, seed)
    return fleet


def remove_groups(zk: ZkSession, groups: Iterable[str]) -> None:
    """Delete whole groups, pipelined (deepest nodes first); tolerant of nodes already gone."""
    remove_trees(zk, [f"{CONSUMERS}/{g}" for g in groups])


def remove_fleet(zk: ZkSession, prefix: str) -> int:
    """Delete every group whose name starts with `<prefix>-`; returns how many."""
    names = [g for g in children(zk, CONSUMERS) or () if g.startswith(prefix + "-")]
    remove_groups(zk, names)
    return len(names)
