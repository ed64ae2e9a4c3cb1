"""The plan file: what an apply run switched, so that it can be undone later (`--rollback PLANFILE`).

It is rewritten (atomically: temp file + rename) after every change, so a run killed half-way still
leaves a file that names every group it switched and the mode each had before.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from migrator.errors import UsageError

PLAN_VERSION = 1


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


@dataclass
class Plan:
    run_id: str
    holder: str
    dry_run: bool
    started_at_ms: int
    options: dict[str, Any] = field(default_factory=dict)
    groups: list[PlanEntry] = field(default_factory=list)
    waves: list[dict[str, Any]] = field(default_factory=list)
    result: str = Result.RUNNING
    finished_at_ms: int | None = None
    rollbacks: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps({"version": PLAN_VERSION, **asdict(self)}, indent=2, sort_keys=True)

    def save(self, path: Path) -> None:
        """Atomic for a regular file; anything else (a FIFO, a device) is written in place, never replaced."""
        path = Path(path)
        if path.exists() and not path.is_file():
            with open(path, "w") as out:
                out.write(self.to_json() + "\n")
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w") as out:
            out.write(self.to_json() + "\n")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> Plan:
        try:
            obj = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise UsageError(f"plan file {path}: {exc}") from exc
        if not isinstance(obj, dict) or obj.get("version") != PLAN_VERSION:
            raise UsageError(f"plan file {path}: not a fleet-scan plan (version {PLAN_VERSION})")
        try:
            obj.pop("version")
            groups = [PlanEntry(**g) for g in obj.pop("groups")]
            return cls(groups=groups, **obj)
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"plan file {path}: malformed: {exc}") from exc

    def entries(self, outcome: Outcome) -> list[PlanEntry]:
        return [g for g in self.groups if g.outcome == outcome]

    def names(self, outcome: Outcome) -> str:
        """`ensemble/group, ...` of the entries with `outcome` ("none" when there are none)."""
        return ", ".join(f"{g.ensemble}/{g.group}" for g in self.entries(outcome)) or "none"
