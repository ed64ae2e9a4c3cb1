"""The plan file: what an apply run switched, so that it can be undone later (`--rollback PLANFILE`).

It is rewritten (atomically: temp file + rename) after every change, so a run killed half-way still
leaves a file that names every group it switched and the mode each had before.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Generic, Self, TypeVar

from migrator.errors import UsageError
from migrator.protocol.lifecycle import Rule

PLAN_VERSION = 1
APPLY_KIND = "apply"  # absent from an apply run's file (they predate the kinds)
CLEANUP_KIND = "cleanup"
CUTOVER_KIND = "cutover"


class Outcome(StrEnum):
    """What became of one group (stored as its value)."""

    PLANNED = "planned"  # dry run: would be switched in this wave
    SKIPPED = "skipped"  # no longer READY, or the preflight refused, when its wave came
    SWITCHED = "switched"  # mode written to kafka (and kept: the wave converged, or the run was interrupted)
    ROLLED_BACK = "rolled_back"  # switched, then restored by the run itself (its wave failed)
    RESTORED = "restored"  # switched, then restored by --rollback
    RESTORE_FAILED = "restore_failed"


class Result(StrEnum):
    """How the run ended (`Plan.result`); `running` while it runs, or when it was killed."""

    RUNNING = "running"
    DRY_RUN = "dry_run"
    APPLIED = "applied"
    ROLLED_BACK = "stopped: wave rolled back"
    LOCK_LOST = "stopped: the ZooKeeper connection holding the lock was interrupted"
    INTERRUPTED = "interrupted"
    STOPPED = "stopped: a group of the wave was not done"  # --cleanup, --cutover


class WaveOutcome(StrEnum):
    CONVERGED = "converged"
    ROLLED_BACK = "rolled_back"
    INTERRUPTED = "interrupted"


@dataclass
class PlanEntry:
    ensemble: str
    group: str
    wave: int
    previous_mode: str | None  # raw value before the switch; None when the node was absent
    previous_mode_exists: bool
    outcome: Outcome = Outcome.PLANNED
    detail: str = ""
    lag_before: int | None = None
    generations_before: dict[str, int] = field(default_factory=dict)
    switched_at_ms: int | None = None
    restored_at_ms: int | None = None

    def __post_init__(self) -> None:
        self.outcome = Outcome(self.outcome)  # a loaded plan file holds the value


@dataclass(frozen=True, slots=True)
class WaveRecord:
    """One wave of an apply run: when it started, how many groups it had, and how its watch ended.

    `checked_at_ms`, `problems` (per `ensemble/group`, the reasons found) and `outcome` stay unset while
    the wave is watched, and in a plan file of a run killed during that watch.
    """

    wave: int
    started_at_ms: int
    groups: int
    checked_at_ms: int | None = None
    problems: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    outcome: WaveOutcome | None = None

    def __post_init__(self) -> None:
        problems = {key: tuple(found) for key, found in self.problems.items()}
        object.__setattr__(self, "problems", MappingProxyType(problems))
        if self.outcome is not None:
            object.__setattr__(self, "outcome", WaveOutcome(self.outcome))


@dataclass(frozen=True, slots=True)
class RollbackRecord:
    """One `--rollback` of the plan: by which run, when, and how many groups it restored or failed to."""

    run_id: str
    at_ms: int
    restored: int
    failed: int


@dataclass
class RunRecord:
    """What every plan file starts with: the run, its holder, its options and how it ended, and the rollbacks
    done from it since."""

    run_id: str
    holder: str
    dry_run: bool
    started_at_ms: int
    options: dict[str, Any] = field(default_factory=dict)
    result: str = Result.RUNNING
    finished_at_ms: int | None = None
    rollbacks: list[RollbackRecord] = field(default_factory=list)

    def record_rollback(self, run_id: str, restored: int, failed: int, at_ms: int) -> None:
        self.rollbacks.append(RollbackRecord(run_id, at_ms, restored, failed))


@dataclass
class Plan(RunRecord):
    """An apply run's plan: the READY groups, their waves and what became of each."""

    groups: list[PlanEntry] = field(default_factory=list)
    waves: list[WaveRecord] = field(default_factory=list)

    def begin_wave(self, wave: int, groups: int, at_ms: int) -> None:
        self.waves.append(WaveRecord(wave, at_ms, groups))

    def end_wave(self, problems: Mapping[str, Any], outcome: WaveOutcome, at_ms: int) -> None:
        """Record how the latest wave's watch ended."""
        self.waves[-1] = replace(self.waves[-1], checked_at_ms=at_ms, problems=problems, outcome=outcome)

    def to_json(self) -> str:
        return json.dumps(_encode(self), indent=2, sort_keys=True)

    def save(self, path: Path) -> None:
        _save(path, self.to_json())

    @classmethod
    def load(cls, path: Path) -> Plan:
        obj = _read(path)
        if obj.get("kind", APPLY_KIND) != APPLY_KIND:
            raise UsageError(f"plan file {path}: a {obj.get('kind')} plan, not an apply run's")
        try:
            return _decode(obj)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"plan file {path}: malformed: {exc}") from exc

    def entries(self, outcome: Outcome) -> list[PlanEntry]:
        return [g for g in self.groups if g.outcome == outcome]

    def names(self, outcome: Outcome) -> str:
        """`ensemble/group, ...` of the entries with `outcome` ("none" when there are none)."""
        return ", ".join(f"{g.ensemble}/{g.group}" for g in self.entries(outcome)) or "none"


def _encode(plan: Plan) -> dict[str, Any]:
    """The plan file's document: the only place that knows its layout (waves and rollbacks as objects)."""
    doc = {name: getattr(plan, name) for name in plan.__dataclass_fields__}
    doc["groups"] = [asdict(entry) for entry in plan.groups]
    doc["waves"] = [_encode_wave(w) for w in plan.waves]
    doc["rollbacks"] = [asdict(r) for r in plan.rollbacks]
    return {"version": PLAN_VERSION, **doc}


def _encode_wave(wave: WaveRecord) -> dict[str, Any]:
    """Unset fields of a wave still being watched are left out, as earlier plan files have them."""
    doc: dict[str, Any] = {"wave": wave.wave, "started_at_ms": wave.started_at_ms, "groups": wave.groups}
    if wave.outcome is not None or wave.checked_at_ms is not None:
        doc["checked_at_ms"] = wave.checked_at_ms
        doc["problems"] = {key: list(found) for key, found in wave.problems.items()}
        doc["outcome"] = wave.outcome
    return doc


def _decode(doc: dict[str, Any]) -> Plan:
    values = {k: v for k, v in doc.items() if k != "version"}
    values["groups"] = [PlanEntry(**g) for g in values.pop("groups")]
    values["waves"] = [WaveRecord(**w) for w in values.pop("waves", [])]
    values["rollbacks"] = [RollbackRecord(**r) for r in values.pop("rollbacks", [])]
    return Plan(**values)


def _save(path: Path, text: str) -> None:
    """Atomic for a regular file; anything else (a FIFO, a device) is written in place, never replaced."""
    path = Path(path)
    if path.exists() and not path.is_file():
        with open(path, "w") as out:
            out.write(text + "\n")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w") as out:
        out.write(text + "\n")
    os.replace(tmp, path)


def _read(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"plan file {path}: {exc}") from exc
    if not isinstance(obj, dict) or obj.get("version") != PLAN_VERSION:
        raise UsageError(f"plan file {path}: not a fleet-scan plan (version {PLAN_VERSION})")
    return obj


def entry_names(entries: Iterable[Any]) -> str:
    """`ensemble/group, ...` of plan entries ("none" when there are none)."""
    return ", ".join(f"{e.ensemble}/{e.group}" for e in entries) or "none"


def plan_kind(path: Path) -> str:
    """`apply` or `cleanup`: which `--rollback` the file asks for."""
    return str(_read(path).get("kind", APPLY_KIND))


class CleanOutcome(StrEnum):
    """What became of one group of a fleet cleanup."""

    PLANNED = "planned"
    DELETED = "deleted"  # archived, then deleted
    REFUSED = "refused"  # no longer finished (or abandoned), or protected: nothing written
    RACED = "raced"  # changed while deleted: what was removed was put back
    FAILED = "failed"
    RESTORED = "restored"  # put back from its archive by --rollback
    RESTORE_FAILED = "restore_failed"


@dataclass(frozen=True, slots=True)
class CleanupEntry:
    ensemble: str
    group: str
    wave: int
    rule: Rule
    archive: str  # where its archive is (to be) written
    outcome: CleanOutcome = CleanOutcome.PLANNED
    detail: str = ""
    at_ms: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "rule", Rule(self.rule))
        object.__setattr__(self, "outcome", CleanOutcome(self.outcome))

    def ended(self, outcome: CleanOutcome, detail: str, at_ms: int | None = None) -> CleanupEntry:
        return replace(self, outcome=outcome, detail=detail, at_ms=at_ms if at_ms is not None else self.at_ms)


class CutOutcome(StrEnum):
    """What became of one group of a fleet cutover (`--cutover GROUPS_FILE`)."""

    PLANNED = "planned"
    FENCED = "fenced"  # fence up, waiting for its legacy members to leave
    CUT_OVER = "cut_over"  # fenced, emptied, offsets carried, mode kafka recorded
    REFUSED = "refused"  # bridges, a mix, no admin identity, live Kafka members...: see detail
    FAILED = "failed"
    ROLLED_BACK = "rolled_back"  # offsets carried back, fence lifted, mode zookeeper (by --rollback)
    ROLLBACK_FAILED = "rollback_failed"


@dataclass(frozen=True, slots=True)
class CutoverEntry:
    ensemble: str
    group: str
    wave: int
    outcome: CutOutcome = CutOutcome.PLANNED
    detail: str = ""
    at_ms: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcome", CutOutcome(self.outcome))

    def ended(self, outcome: CutOutcome, detail: str, at_ms: int | None = None) -> CutoverEntry:
        return replace(self, outcome=outcome, detail=detail, at_ms=at_ms if at_ms is not None else self.at_ms)


Entry = TypeVar("Entry", CleanupEntry, CutoverEntry)


@dataclass
class EntryRun(RunRecord, Generic[Entry]):
    """A plan file of groups in waves, one typed entry per group (`ENTRY`), tagged with its `KIND`."""

    KIND: ClassVar[str]
    ENTRY: ClassVar[type]
    groups: list[Entry] = field(default_factory=list)

    def update(self, done: Sequence[Entry]) -> None:
        """Replace the entries of the same (ensemble, group) with `done`."""
        by_key = {(e.ensemble, e.group): e for e in done}
        self.groups = [by_key.get((e.ensemble, e.group), e) for e in self.groups]

    def entries(self, *outcomes: StrEnum) -> list[Entry]:
        return [e for e in self.groups if e.outcome in outcomes]

    def to_json(self) -> str:
        doc = {f.name: getattr(self, f.name) for f in fields(self)}
        doc["groups"] = [asdict(e) for e in self.groups]
        doc["rollbacks"] = [asdict(r) for r in self.rollbacks]
        return json.dumps({"version": PLAN_VERSION, "kind": self.KIND, **doc}, indent=2, sort_keys=True)

    def save(self, path: Path) -> None:
        _save(path, self.to_json())

    @classmethod
    def load(cls, path: Path) -> Self:
        obj = _read(path)
        if obj.get("kind") != cls.KIND:
            raise UsageError(f"plan file {path}: not a {cls.KIND} plan")
        try:
            values = {k: v for k, v in obj.items() if k not in ("version", "kind")}
            values["groups"] = [cls.ENTRY(**g) for g in values.pop("groups")]
            values["rollbacks"] = [RollbackRecord(**r) for r in values.pop("rollbacks", [])]
            return cls(**values)
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"plan file {path}: malformed: {exc}") from exc


@dataclass
class CleanupRun(EntryRun[CleanupEntry]):
    """The plan file of `fleet-scan --cleanup`: every group it cleans, its wave, archive and outcome."""

    KIND: ClassVar[str] = CLEANUP_KIND
    ENTRY: ClassVar[type] = CleanupEntry


@dataclass
class CutoverRun(EntryRun[CutoverEntry]):
    """The plan file of `fleet-scan --cutover`: every group it cuts over, its wave and outcome."""

    KIND: ClassVar[str] = CUTOVER_KIND
    ENTRY: ClassVar[type] = CutoverEntry
