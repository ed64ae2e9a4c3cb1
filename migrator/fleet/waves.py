"""Running the planned waves of a fleet cleanup or cutover under the scanner lock, and undoing them (and an apply
run, `migrator.fleet.apply`) from their plan file (`fleet-scan --cleanup/--cutover --execute`, `--rollback`).

The plan (`migrator.fleet.plan`) is saved after every group, so a run stopped anywhere leaves a file that names
what was done. Whether the run goes on after a wave is a pure decision (`next_after_wave`) over what that wave
did; a wave's own work (a Spark job, a cutover per group) is handed in or done here with the commands' steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol, TypeVar

from migrator.errors import MigratorError, RefusedError
from migrator.fleet.apply import FleetIO, Guard, rollback_plan
from migrator.fleet.cleanup import CleanSettings, restore_entry
from migrator.fleet.lock import FleetLock
from migrator.fleet.plan import (
    CleanOutcome,
    CleanupEntry,
    CleanupRun,
    CutOutcome,
    CutoverEntry,
    CutoverRun,
    EntryRun,
    Outcome,
    Plan,
    PlanEntry,
    Result,
    entry_names,
)
from migrator.fleet.scan import now_ms
from migrator.protocol.cutover import Direction, Step
from migrator.zk.session import ZkSession

Entry = TypeVar("Entry", CleanupEntry, CutoverEntry)


class CutoverRunner(Protocol):
    """One group's cutover procedure (`migrator.ops.cutover.Runner`)."""

    def run(self, direction: Direction, *, stop_before: Step | None = None) -> Any: ...


RunnerOf = Callable[[str], CutoverRunner]


class WaveFailed(MigratorError):
    """A wave's Spark job failed on an executor (the cause is chained); the plan says `failed in wave N`."""

    def __init__(self, wave: int) -> None:
        super().__init__(f"wave {wave} failed on an executor")
        self.wave = wave


@dataclass(frozen=True)
class WaveOutput:
    """Where a run's lines go: `say` for the plan and each wave, `warn` for each group that did not end as wanted."""

    say: Callable[[str], None]
    warn: Callable[[str], None]


# --- pure: the plan's waves and what comes after one ---------------------------------------------------------


def wave_numbers(entries: Iterable[Entry]) -> list[int]:
    return sorted({e.wave for e in entries})


def in_wave(entries: Iterable[Entry], wave: int) -> list[Entry]:
    return [e for e in entries if e.wave == wave]


def trouble(done: Iterable[Entry], wanted: StrEnum) -> list[Entry]:
    """The entries of a wave that did not end `wanted`."""
    return [e for e in done if e.outcome is not wanted]


def trouble_line(entry: Entry) -> str:
    return f"{entry.ensemble}/{entry.group}: {entry.outcome}: {entry.detail}"


def next_after_wave(done: Sequence[Entry], wanted: StrEnum, locked: bool) -> Result | None:
    """None to go on with the next wave; else how the run ends: a group of the wave not done, or the lock lost."""
    if trouble(done, wanted):
        return Result.STOPPED
    return None if locked else Result.LOCK_LOST


def undo_order(entries: Iterable[Entry]) -> list[Entry]:
    """A rollback's order: the latest wave first."""
    return sorted(entries, key=lambda e: (-e.wave, e.group))


def listed_groups(text: str) -> list[str]:
    """The groups of a `--cutover` file: one a line; blank lines and `#` comments skipped."""
    names = [line.strip() for line in text.splitlines()]
    return [n for n in names if n and not n.startswith("#")]


def cutover_plan(
    run_id: str, ensemble: str, groups: Sequence[str], wave_size: int, wait_s: float, *, dry: bool
) -> CutoverRun:
    """The plan of a fleet cutover: the groups of `ensemble` cut into waves of `wave_size`."""
    entries = [CutoverEntry(ensemble, g, i // wave_size + 1) for i, g in enumerate(groups)]
    plan = CutoverRun(run_id, f"dry run {run_id}", dry, now_ms(), groups=entries)
    plan.options = {"ensemble": ensemble, "wave_size": wave_size, "wait_s": wait_s}
    return plan


# --- running waves ---------------------------------------------------------------------------------------------


def dry_run(plan: EntryRun[Any], plan_path: Path) -> None:
    """A plan that runs no wave: saved as the dry run's."""
    plan.result = Result.DRY_RUN
    finish(plan, plan_path)


def finish(plan: EntryRun[Any], plan_path: Path) -> None:
    plan.finished_at_ms = now_ms()
    plan.save(plan_path)


@contextmanager
def _holding_lock(
    plan: EntryRun[Any], plan_path: Path, zk: ZkSession, run_id: str, say: Callable[[str], None]
) -> Iterator[FleetLock]:
    """The scanner lock taken, its holder written into the plan before the first wave."""
    with FleetLock(zk, run_id) as lock:
        plan.holder = lock.identity
        plan.save(plan_path)
        say(f"plan {plan_path}")
        yield lock


def run_waves(
    plan: EntryRun[Entry],
    one_wave: Callable[[int, list[Entry]], list[Entry]],
    wanted: StrEnum,
    out: WaveOutput,
    still_locked: Callable[[], bool] = lambda: True,
) -> None:
    """Wave after wave until one has a group not ended `wanted` (each named) or the lock may be lost; the plan's
    result says how the run ended."""
    for wave in wave_numbers(plan.groups):
        done = one_wave(wave, in_wave(plan.groups, wave))
        for entry in trouble(done, wanted):
            out.warn(trouble_line(entry))
        stop = next_after_wave(done, wanted, still_locked())
        if stop is not None:
            plan.result = stop
            return
    plan.result = Result.APPLIED


def clean_waves(
    plan: CleanupRun, plan_path: Path, lock_zk: ZkSession, run_id: str, settings: CleanSettings, spark: Any,
    out: WaveOutput,
) -> None:  # fmt: skip
    """Each wave of a fleet cleanup as one Spark job, under the scanner lock; stops after a wave where a group was
    not cleaned. Raises `WaveFailed` when a wave's job failed."""

    def one_wave(wave: int, entries: list[CleanupEntry]) -> list[CleanupEntry]:
        return _clean_wave(plan, plan_path, wave, entries, settings, spark, out.say)

    with _holding_lock(plan, plan_path, lock_zk, run_id, out.say) as lock:
        run_waves(plan, one_wave, CleanOutcome.DELETED, out, lock.held)
    finish(plan, plan_path)


def _clean_wave(
    plan: CleanupRun, plan_path: Path, wave: int, entries: list[CleanupEntry], settings: CleanSettings, spark: Any,
    say: Callable[[str], None],
) -> list[CleanupEntry]:  # fmt: skip
    from migrator.fleet.pipeline import run_cleanup_wave

    started = time.monotonic()
    try:
        done = run_cleanup_wave(spark, entries, settings)
    except Exception as exc:  # a task failed on an executor
        plan.result = f"failed in wave {wave}"
        finish(plan, plan_path)
        raise WaveFailed(wave) from exc
    plan.update(done)
    plan.save(plan_path)
    cleaned = [e for e in done if e.outcome is CleanOutcome.DELETED]
    say(f"wave {wave}: cleaned {len(cleaned)} of {len(done)} in {time.monotonic() - started:.1f}s")
    return done


def cutover_waves(
    plan: CutoverRun, plan_path: Path, zk: ZkSession, run_id: str, runner_of: RunnerOf, out: WaveOutput, guard: Guard
) -> None:
    """The listed groups in waves under the scanner lock, by `migrator cutover`'s own steps; stops after a wave
    with trouble."""

    def one_wave(wave: int, entries: list[CutoverEntry]) -> list[CutoverEntry]:
        cut_wave(plan, plan_path, entries, runner_of, guard)
        done = in_wave(plan.groups, wave)
        cut = [e for e in done if e.outcome is CutOutcome.CUT_OVER]
        out.say(f"wave {wave}: cut over {len(cut)} of {len(done)}: {entry_names(cut)}")
        return done

    with _holding_lock(plan, plan_path, zk, run_id, out.say):
        run_waves(plan, one_wave, CutOutcome.CUT_OVER, out)
    finish(plan, plan_path)


def cut_wave(plan: CutoverRun, plan_path: Path, entries: list[CutoverEntry], runner_of: RunnerOf, guard: Guard) -> None:
    """Fence every group of the wave first (its deployments stop together), then finish each in turn."""
    names = {e.group for e in entries}
    for stop_before, outcome in ((Step.WAIT_EMPTY, CutOutcome.FENCED), (None, CutOutcome.CUT_OVER)):
        for entry in [
            e for e in plan.groups if e.group in names and e.outcome in (CutOutcome.PLANNED, CutOutcome.FENCED)
        ]:
            with guard():
                plan.update([_cut_step(runner_of(entry.group), entry, stop_before, outcome)])
                plan.save(plan_path)


def _cut_step(
    runner: CutoverRunner, entry: CutoverEntry, stop_before: Step | None, outcome: CutOutcome
) -> CutoverEntry:
    try:
        runner.run(Direction.FORWARD, stop_before=stop_before)
    except MigratorError as exc:
        return entry.ended(CutOutcome.REFUSED if isinstance(exc, RefusedError) else CutOutcome.FAILED, str(exc))
    return entry.ended(outcome, "", at_ms=now_ms())


# --- rollbacks -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Undone:
    """What a rollback tried, and the entries it failed to undo."""

    tried: int
    failed: list[Any]


def _undo_each(
    plan: EntryRun[Entry], plan_path: Path, todo: Sequence[Entry], undo: Callable[[Entry], Entry], guard: Guard
) -> None:
    for entry in undo_order(todo):
        with guard():
            plan.update([undo(entry)])
            plan.save(plan_path)


def _recorded(plan: EntryRun[Any], plan_path: Path, run_id: str, tried: int, failed: list[Any]) -> Undone:
    plan.record_rollback(run_id, tried - len(failed), len(failed), now_ms())
    plan.save(plan_path)
    return Undone(tried, failed)


def rollback_cleanup(
    plan: CleanupRun, plan_path: Path, zks: dict[str, ZkSession], zk_auth: str | None, lock_zk: ZkSession,
    run_id: str, guard: Guard,
) -> Undone:  # fmt: skip
    """Every cleaned group put back from its archive (a failed restore tried again), latest wave first."""
    todo = plan.entries(CleanOutcome.DELETED, CleanOutcome.RESTORE_FAILED)
    with FleetLock(lock_zk, run_id):
        _undo_each(plan, plan_path, todo, lambda e: restore_entry(zks[e.ensemble], e, zk_auth), guard)
    return _recorded(plan, plan_path, run_id, len(todo), plan.entries(CleanOutcome.RESTORE_FAILED))


def rollback_cutover(
    plan: CutoverRun, plan_path: Path, lock_zk: ZkSession, run_id: str, runner_of: RunnerOf, guard: Guard
) -> Undone:
    """Each cut-over (or fenced) group carried back to ZooKeeper and its fence lifted, latest wave first."""
    todo = plan.entries(CutOutcome.CUT_OVER, CutOutcome.FENCED, CutOutcome.ROLLBACK_FAILED)
    with FleetLock(lock_zk, run_id):
        _undo_each(plan, plan_path, todo, lambda e: _cut_back(runner_of(e.group), e), guard)
    return _recorded(plan, plan_path, run_id, len(todo), plan.entries(CutOutcome.ROLLBACK_FAILED))


def _cut_back(runner: CutoverRunner, entry: CutoverEntry) -> CutoverEntry:
    try:
        runner.run(Direction.ROLLBACK)
    except MigratorError as exc:
        return entry.ended(CutOutcome.ROLLBACK_FAILED, str(exc))
    return entry.ended(CutOutcome.ROLLED_BACK, "", at_ms=now_ms())


def rollback_apply(io: FleetIO, plan: Plan, plan_path: Path, run_id: str, guard: Guard) -> tuple[list[PlanEntry], int]:
    """`rollback_plan` of an apply run's plan: (the entries this rollback restored, how many it failed to)."""
    already = {id(e) for e in plan.entries(Outcome.RESTORED)}
    _, failed = rollback_plan(io, plan, plan_path, run_id, guard=guard)
    back = [e for e in plan.entries(Outcome.RESTORED) if id(e) not in already and e.restored_at_ms is not None]
    return back, failed
