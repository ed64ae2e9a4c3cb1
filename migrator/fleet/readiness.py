"""Can this ZooKeeper go? The verdict per ensemble, a pure function of the scan's rows and of what the
ensemble said about its sessions and clients (docs/fleet.md, "Retiring ZooKeeper").

An ensemble is ready to retire when no consumer group has a tree left under `/consumers` and no live session
holds an ephemeral node there. Every group still there is a blocker, with the command that moves it on; the
brokers' own use (`/brokers/ids`) and other connected clients are reported apart: KIP-866 migrates the
former, and the verdict cannot tell what the latter read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from migrator.fleet.model import FleetRow, Status
from migrator.protocol.codecs import Mode

READY_LINE = "READY TO RETIRE: no consumer group depends on this ensemble"
SHOWN = 5


class Stage(StrEnum):
    """Where a group stands on the way off ZooKeeper (counted per ensemble)."""

    ZOOKEEPER = "zookeeper-coordinated"
    MIGRATING = "migrating"
    FINISHED = "finished-not-cleaned"
    ABANDONED = "abandoned"
    CLEANED = "cleaned"


class Step(StrEnum):
    """What resolves a blocker; each has one command (`COMMANDS`)."""

    SWITCH = "switch"  # READY: bridges only, stable
    CUTOVER = "cutover"  # legacy members only: no bridge to switch
    INSPECT = "inspect"  # blocked, mixed or contradictory: an operator looks first
    REPLACE_BRIDGES = "replace-bridges"  # coordinated by Kafka, but its bridges still register in ZooKeeper
    START_KAFKA_CONSUMERS = "start-kafka-consumers"  # cut over, its Kafka consumers not started yet
    CLEANUP = "cleanup"  # finished: archive and delete the tree
    CLEANUP_ABANDONED = "cleanup-abandoned"
    STOP_SESSIONS = "stop-sessions"  # ephemeral nodes under /consumers outside what the scan read
    SCAN_ALL = "scan-all"  # --include/--exclude left groups out


COMMANDS: Mapping[Step, str] = MappingProxyType(
    {
        Step.SWITCH: "migrator set-mode kafka -z {zk} -g {group}",
        Step.CUTOVER: "migrator cutover -z {zk} -g {group}",
        Step.INSPECT: "migrator status -z {zk} -g {group}",
        Step.REPLACE_BRIDGES: "migrator status -z {zk} -g {group}  (replace its bridges with plain Kafka consumers)",
        Step.START_KAFKA_CONSUMERS: "start its Kafka consumers; then migrator status -z {zk} -g {group}",
        Step.CLEANUP: "migrator cleanup -z {zk} -g {group} --execute",
        Step.CLEANUP_ABANDONED: "migrator cleanup -z {zk} -g {group} --abandoned --execute",
        Step.STOP_SESSIONS: "echo dump | nc {host} {port}  (find each session's client, stop it)",
        Step.SCAN_ALL: "migrator fleet-scan -z {zk} --readiness  (without --include/--exclude)",
    }
)
_WHAT: Mapping[Step, str] = MappingProxyType(
    {
        Step.SWITCH: "READY groups still coordinated by ZooKeeper",
        Step.CUTOVER: "legacy groups (no bridge): cut over",
        Step.INSPECT: "groups to look at (blocked, mixed, orphaned or inconsistent)",
        Step.REPLACE_BRIDGES: "groups on Kafka whose bridges still register in ZooKeeper",
        Step.START_KAFKA_CONSUMERS: "cut-over groups whose Kafka consumers have not started",
        Step.CLEANUP: "finished groups whose tree is still there",
        Step.CLEANUP_ABANDONED: "abandoned groups",
        Step.STOP_SESSIONS: "live sessions hold ephemeral nodes under /consumers",
        Step.SCAN_ALL: "groups this scan left out",
    }
)


@dataclass(frozen=True, slots=True)
class EnsembleUse:
    """What the ensemble says beyond the groups' trees. None: the server did not tell (four-letter word
    not allowed, or unreachable)."""

    consumers_sessions: tuple[str, ...] | None = None  # sessions with ephemeral nodes under /consumers (`dump`)
    other_clients: tuple[str, ...] | None = None  # `cons`: clients neither brokers nor this scan
    brokers: int = 0  # registered under /brokers/ids: the brokers' own use, migrated by KIP-866
    unscanned_groups: int = 0  # left out by --include/--exclude
    cleaned: int | None = None  # groups known cleaned (their archive, their tree gone); None: unknown


@dataclass(frozen=True, slots=True)
class Blocker:
    step: Step
    items: tuple[str, ...]  # groups, or ephemeral paths

    @property
    def what(self) -> str:
        return _WHAT[self.step]

    def command(self, ensemble: str) -> str:
        group = self.items[0] if len(self.items) == 1 else "GROUP"
        host, _, port = ensemble.split("/", 1)[0].split(",")[0].rpartition(":")
        return COMMANDS[self.step].format(zk=ensemble, group=group, host=host or port, port=port if host else 2181)

    def shown(self) -> str:
        more = len(self.items) - SHOWN
        return ", ".join(self.items[:SHOWN]) + (f" and {more} more" if more > 0 else "")


@dataclass(frozen=True, slots=True)
class Readiness:
    ensemble: str
    counts: Mapping[Stage, int]
    use: EnsembleUse
    blockers: tuple[Blocker, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "counts", MappingProxyType(dict(self.counts)))

    @property
    def ready(self) -> bool:
        return not self.blockers

    @property
    def verdict(self) -> str:
        if self.ready:
            return READY_LINE
        return f"NOT YET: {len(self.blockers)} blockers, each with the command that resolves it:"


def ensemble_use(
    chroot: str | None,
    clients: Mapping[int, str] | None,
    ephemerals: Mapping[int, Sequence[str]] | None,
    brokers: Mapping[str, int],
    own_sessions: Iterable[int | None],
    **counts: Any,
) -> EnsembleUse:
    """The ensemble's use outside the groups, from the servers' session lists (`cons`, `dump`; None when
    not told), the brokers' sessions and the scan's own. `counts`: `unscanned_groups`, `cleaned`."""
    sessions = None if ephemerals is None else _consumers_sessions(f"{chroot or ''}/consumers/", ephemerals)
    known = set(brokers.values()) | {s for s in own_sessions if s is not None}
    others = None if clients is None else tuple(sorted(a for s, a in clients.items() if s not in known))
    return EnsembleUse(sessions, others, len(brokers), **counts)


def _consumers_sessions(prefix: str, ephemerals: Mapping[int, Sequence[str]]) -> tuple[str, ...]:
    """`0xSESSION: N ephemeral nodes in GROUP, ...` for every session with ephemeral nodes under `prefix`."""
    found = []
    for session, paths in sorted(ephemerals.items()):
        mine = [p[len(prefix) :] for p in paths if p.startswith(prefix)]
        if mine:
            groups = sorted({p.split("/", 1)[0] for p in mine})
            found.append(f"{session:#x}: {len(mine)} ephemeral nodes in {', '.join(groups[:SHOWN])}")
    return tuple(found)


def cleaned_count(archived: Iterable[tuple[str, str]], ensemble: str, present: Iterable[str]) -> int:
    """Groups of `ensemble` that have an archive (`(ensemble, group)` each) and no tree any more."""
    there = set(present)
    return len({g for e, g in archived if e == ensemble and g not in there})


def stage_and_step(row: FleetRow) -> tuple[Stage, Step]:
    """The stage of one scanned group, and the step that moves it on."""
    status = Status(row.status)
    if status is Status.KAFKA:
        return (Stage.FINISHED, Step.CLEANUP) if row.members == 0 else (Stage.MIGRATING, Step.REPLACE_BRIDGES)
    if status is Status.ABANDONED:
        return Stage.ABANDONED, Step.CLEANUP_ABANDONED
    if status is Status.CUT_OVER:
        started = row.kafka_members > 0
        return (Stage.FINISHED, Step.CLEANUP) if started else (Stage.MIGRATING, Step.START_KAFKA_CONSUMERS)
    if status is Status.READY:
        return Stage.ZOOKEEPER, Step.SWITCH
    if status is Status.LEGACY:
        return Stage.ZOOKEEPER, Step.CUTOVER
    if status in (Status.MIGRATING, Status.MIXED_KAFKA_CONSUMERS):
        return Stage.MIGRATING, Step.INSPECT
    if status is Status.BLOCKED and row.mode_node.mode is Mode.KAFKA:
        return Stage.MIGRATING, Step.INSPECT
    return Stage.ZOOKEEPER, Step.INSPECT  # BLOCKED, ORPHANED, INCONSISTENT


def _group_blockers(staged: Iterable[tuple[FleetRow, Step]]) -> list[Blocker]:
    by_step: dict[Step, list[str]] = {}
    for row, step in staged:
        by_step.setdefault(step, []).append(row.group)
    return [Blocker(step, tuple(sorted(by_step[step]))) for step in Step if step in by_step]


def _use_blockers(use: EnsembleUse) -> list[Blocker]:
    found = []
    if use.consumers_sessions:
        found.append(Blocker(Step.STOP_SESSIONS, use.consumers_sessions))
    if use.unscanned_groups:
        found.append(Blocker(Step.SCAN_ALL, (f"{use.unscanned_groups} groups",)))
    return found


def readiness(ensemble: str, rows: Sequence[FleetRow], use: EnsembleUse) -> Readiness:
    """The verdict for one ensemble over its rows (rows of other ensembles are ignored)."""
    mine = [r for r in rows if r.ensemble == ensemble]
    staged = [(r, *stage_and_step(r)) for r in mine]
    counts = {stage: sum(1 for _, s, _ in staged if s is stage) for stage in Stage}
    counts[Stage.CLEANED] = use.cleaned or 0
    blockers = _group_blockers((r, step) for r, _, step in staged) + _use_blockers(use)
    return Readiness(ensemble, counts, use, tuple(blockers))


def to_doc(result: Readiness) -> dict[str, Any]:
    """The JSON form: the same fields as the text."""
    use = result.use
    return {
        "ensemble": result.ensemble,
        "ready": result.ready,
        "verdict": result.verdict,
        "groups": {stage.value: n for stage, n in result.counts.items()},
        "cleaned_known": use.cleaned is not None,
        "consumers_sessions": list(use.consumers_sessions) if use.consumers_sessions is not None else None,
        "other_clients": list(use.other_clients) if use.other_clients is not None else None,
        "brokers": use.brokers,
        "blockers": [
            {"kind": b.step.value, "what": b.what, "items": list(b.items), "command": b.command(result.ensemble)}
            for b in result.blockers
        ],
    }


def _seen(items: tuple[str, ...] | None, word: str) -> str:
    if items is None:
        return f"unknown (the server does not answer `{word}`)"
    return f"{len(items)}" + (f": {', '.join(items[:SHOWN])}" if items else "")


def to_text(result: Readiness) -> str:
    use = result.use
    counts = ", ".join(f"{stage.value} {n}" for stage, n in result.counts.items() if stage is not Stage.CLEANED)
    cleaned = str(result.counts[Stage.CLEANED]) if use.cleaned is not None else "unknown (no --archive-dir)"
    lines = [
        f"readiness of {result.ensemble}:",
        f"  groups: {counts}, cleaned {cleaned}",
        f"  live sessions with ephemeral nodes under /consumers: {_seen(use.consumers_sessions, 'dump')}",
        f"  other connected clients (not brokers, not this scan): {_seen(use.other_clients, 'cons')}",
        f"  brokers registered under /brokers/ids (their own use, migrated by KIP-866): {use.brokers}",
        f"  {result.verdict}",
    ]
    for b in result.blockers:
        lines.append(f"    {b.what}: {b.shown()}")
        lines.append(f"      {b.command(result.ensemble)}")
    return "\n".join(lines)
