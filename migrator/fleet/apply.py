"""Applying a scan: READY groups switched to kafka in waves, each wave watched and rolled back on trouble.

The scan's rows are only a hint: before each switch the group is read again and must still be READY, and
the switch itself goes through set-mode (`migrator.ops.modes.set_mode`): the same preflight, the same
version-conditional write with its audit entry. After a wave every switched group must converge (each
bridge published authority kafka in a rebalance after the switch, every embedded member in the Kafka
group, every partition owned) within the wave interval, and its lag must not grow by more than
`max_lag_growth`; otherwise the whole wave goes back to zookeeper and the run stops.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from migrator.errors import MigratorError, RefusedError
from migrator.fleet.classify import classify, convergence_problems, group_lag, restore_problems
from migrator.fleet.model import FleetRow, KafkaGroupFacts, Status
from migrator.fleet.plan import Outcome, Plan, PlanEntry, Result, WaveOutcome, entry_names
from migrator.fleet.scan import FleetKafka, now_ms
from migrator.kafka.admin import KafkaAdmin
from migrator.ops.modes import set_mode
from migrator.protocol.codecs import Mode, ModeNode
from migrator.protocol.group_view import GroupView
from migrator.zk.group_reader import read_group
from migrator.zk.session import ZkSession

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ApplyOptions:
    wave_size: int = 10
    wave_interval_s: float = 60.0
    max_lag_growth: int = 10_000
    stable_for_ms: int = 30 * 60_000
    poll_s: float = 1.0
    reason: str = "fleet-scan --apply"


class FleetIO:
    """The imperative shell over every ensemble: fresh reads and mode writes, one client per ensemble."""

    def __init__(
        self,
        zks: Mapping[str, ZkSession],
        bootstrap: Mapping[str, str | None],
        group_max_size: Mapping[str, int | None],
        who: str,
        kafka_properties: Mapping[str, str] | None = None,
    ) -> None:
        self.zks = zks
        self.who = who
        self.group_max_size = group_max_size
        self._admins = {e: KafkaAdmin(b, kafka_properties) for e, b in bootstrap.items() if b}
        self._readers = {e: FleetKafka(admin) for e, admin in self._admins.items()}

    def read(self, ensemble: str, group: str) -> tuple[GroupView, KafkaGroupFacts | None]:
        view = read_group(self.zks[ensemble], group)
        reader = self._readers.get(ensemble)
        facts = reader.read([view], refresh_topics=True)[group] if reader is not None else None
        return view, facts

    def close(self) -> None:
        for admin in self._admins.values():
            admin.close()

    def set_mode(self, ensemble: str, group: str, target: Mode, reason: str) -> None:
        """Through set-mode: its preflight refuses (RefusedError) what it would refuse from the CLI."""
        set_mode(self.zks[ensemble], group, target, admin=self._admins.get(ensemble), reason=reason, who=self.who)


def waves(rows: Sequence[FleetRow], wave_size: int) -> list[list[FleetRow]]:
    """READY rows in a stable order (ensemble, group), cut into waves."""
    ready = sorted((r for r in rows if r.state is Status.READY), key=lambda r: (r.ensemble, r.group))
    size = max(1, wave_size)
    return [ready[i : i + size] for i in range(0, len(ready), size)]


def plan_waves(plan: Plan, rows: Sequence[FleetRow], wave_size: int) -> list[list[PlanEntry]]:
    """Add a planned entry per READY group to `plan`; returns the entries wave by wave."""
    out: list[list[PlanEntry]] = []
    for number, wave in enumerate(waves(rows, wave_size), start=1):
        entries = [
            PlanEntry(r.ensemble, r.group, number, previous_mode=r.mode, previous_mode_exists=r.mode is not None)
            for r in wave
        ]
        plan.groups.extend(entries)
        out.append(entries)
    return out


Guard = Callable[[], AbstractContextManager[None]]
"""Holds Ctrl-C off across a mode write and its record in the plan (the CLI passes `interrupts_deferred`)."""


def _switch(io: FleetIO, entry: PlanEntry, options: ApplyOptions, plan: Plan, guard: Guard) -> None:
    view, facts = io.read(entry.ensemble, entry.group)
    now = classify(view, facts, now_ms(), options.stable_for_ms, io.group_max_size.get(entry.ensemble))
    if now.status is not Status.READY:
        entry.outcome, entry.detail = Outcome.SKIPPED, f"now {now.status.value}: " + "; ".join(now.reasons)
        return
    entry.previous_mode = view.mode.raw if view.mode.exists else None
    entry.previous_mode_exists = view.mode.exists
    entry.lag_before = group_lag(view, facts)
    entry.generations_before = {cid: a.generation for cid, a in view.authorities.items()}
    try:
        with guard():
            reason = f"{options.reason} run {plan.run_id} wave {entry.wave}"
            io.set_mode(entry.ensemble, entry.group, Mode.KAFKA, reason)
            entry.outcome, entry.switched_at_ms = Outcome.SWITCHED, now_ms()
    except RefusedError as exc:
        entry.outcome, entry.detail = Outcome.SKIPPED, f"set-mode refused: {exc}"


def wave_problems(
    view: GroupView, facts: KafkaGroupFacts | None, entry: PlanEntry, max_lag_growth: int
) -> tuple[list[str], list[str]]:
    """(convergence problems, lag problems) of one switched group; both empty when it is fine."""
    converge = convergence_problems(view, facts, entry.generations_before)
    lag = group_lag(view, facts)
    lag_problems = []
    if lag is not None and entry.lag_before is not None and lag - entry.lag_before > max_lag_growth:
        lag_problems.append(f"lag-growth: lag grew from {entry.lag_before} to {lag} (> {max_lag_growth})")
    return converge, lag_problems


def _caught_up(view: GroupView, facts: KafkaGroupFacts | None, entry: PlanEntry) -> bool:
    """The group's lag is no higher than just before its switch (or unknown either time)."""
    lag = group_lag(view, facts)
    return lag is None or entry.lag_before is None or lag <= entry.lag_before


@dataclass(frozen=True)
class _WaveRead:
    problems: dict[str, list[str]]
    lagging: bool  # some group's lag grew past --max-lag-growth: the wave fails at once
    settled: bool  # no problem and every group caught up: converged if the next read agrees


def _read_wave(io: FleetIO, entries: Sequence[PlanEntry], options: ApplyOptions, only: set[str] | None) -> _WaveRead:
    problems: dict[str, list[str]] = {}
    lagging, caught_up = False, True
    for e in entries:
        key = f"{e.ensemble}/{e.group}"
        if only is not None and key not in only:
            continue
        view, facts = io.read(e.ensemble, e.group)
        converge, lag = wave_problems(view, facts, e, options.max_lag_growth)
        if converge or lag:
            problems[key] = converge + lag
        lagging = lagging or bool(lag)
        caught_up = caught_up and _caught_up(view, facts, e)
    return _WaveRead(problems, lagging, not problems and caught_up)


def _watch(io: FleetIO, entries: Sequence[PlanEntry], options: ApplyOptions, sleep: Callable[[float], None]) -> dict:
    """Observe a wave until it converged or `wave_interval_s` passed; lag trouble ends it at once.

    Converged: two reads in a row, one poll apart, find no problem and no group's lag above its level before
    the switch (a group still catching up is watched on). A bridge's rebalance releases its owners before it
    claims the new ones, so one read can catch a partition unowned: at the deadline a group fails
    convergence only if a second read, one poll later, agrees.
    """
    deadline = time.monotonic() + options.wave_interval_s
    suspects: set[str] | None = None
    settled_reads = 0
    while True:
        read = _read_wave(io, entries, options, suspects)
        if read.lagging or suspects is not None:
            return read.problems
        settled_reads = settled_reads + 1 if read.settled else 0
        if settled_reads >= 2:
            return {}
        if time.monotonic() >= deadline:
            if not read.problems:
                return {}
            suspects = set(read.problems)
        sleep(options.poll_s if suspects is not None else min(options.poll_s, max(0.0, deadline - time.monotonic())))


def restore(io: FleetIO, entry: PlanEntry, reason: str, guard: Guard = nullcontext) -> bool:
    """Back to zookeeper. An absent node before the switch is restored as `zookeeper` (docs/fleet.md)."""
    target = Mode.ZOOKEEPER
    if ModeNode(entry.previous_mode_exists, entry.previous_mode).mode is Mode.KAFKA:
        return True  # it was kafka before us: nothing of ours to undo
    try:
        with guard():
            io.set_mode(entry.ensemble, entry.group, target, reason)
            entry.restored_at_ms = now_ms()
    except MigratorError as exc:
        entry.detail = f"restore failed: {exc}"
        log.error("restoring %s/%s failed: %s", entry.ensemble, entry.group, exc)
        return False
    return True


def _run_wave(io: FleetIO, plan: Plan, entries: Sequence[PlanEntry], run: _Run) -> bool:
    """Switch, watch and (on trouble) roll back one wave; False when it was rolled back."""
    number = entries[0].wave
    plan.begin_wave(number, len(entries), now_ms())
    for entry in entries:
        _switch(io, entry, run.options, plan, run.guard)
        plan.save(run.plan_path)
        if entry.outcome == Outcome.SKIPPED:
            run.on_event(f"wave {number}: skipped {entry.ensemble}/{entry.group}: {entry.detail}")
    switched = [e for e in entries if e.outcome == Outcome.SWITCHED]
    run.on_event(
        f"wave {number}: switched {len(switched)} of {len(entries)} groups ({entry_names(switched)}); "
        f"watching up to {run.options.wave_interval_s:g}s"
    )
    started = time.monotonic()
    problems = _watch(io, switched, run.options, run.sleep) if switched else {}
    checked_at_ms = now_ms()
    if not problems:
        plan.end_wave(problems, WaveOutcome.CONVERGED, checked_at_ms)
        plan.save(run.plan_path)
        run.on_event(f"wave {number}: converged in {time.monotonic() - started:.0f}s: {entry_names(switched)}")
        return True
    reason = f"{run.options.reason} run {plan.run_id}: wave {number} rolled back"
    for entry in switched:
        entry.outcome = Outcome.ROLLED_BACK if restore(io, entry, reason, run.guard) else Outcome.RESTORE_FAILED
    plan.end_wave(problems, WaveOutcome.ROLLED_BACK, checked_at_ms)
    plan.result = Result.ROLLED_BACK
    plan.save(run.plan_path)
    run.on_event(f"wave {number}: trouble in {len(problems)} groups; the wave was rolled back, stopping:")
    for entry in switched:
        key = f"{entry.ensemble}/{entry.group}"
        why = "; ".join(problems.get(key, ["no trouble of its own"]))
        done = f"{entry.outcome}" + (f" ({entry.detail})" if entry.detail else "")
        run.on_event(f"  {key}: {done}: {why}")
    return False


@dataclass(frozen=True)
class _Run:
    options: ApplyOptions
    plan_path: Path
    sleep: Callable[[float], None]
    on_event: Callable[[str], None]
    guard: Guard


def apply_waves(
    io: FleetIO,
    plan: Plan,
    wave_entries: Iterable[Sequence[PlanEntry]],
    options: ApplyOptions,
    plan_path: Path,
    sleep: Callable[[float], None] = time.sleep,
    on_event: Callable[[str], None] = lambda _msg: None,
    still_locked: Callable[[], bool] = lambda: True,
    guard: Guard = nullcontext,
) -> bool:
    """Switch wave after wave; returns False (and stops) after the first wave that had to be rolled back,
    or before a wave when the lock may have been lost (a wave already switched is still watched)."""
    run = _Run(options, plan_path, sleep, on_event, guard)
    for entries in wave_entries:
        if not entries:
            continue
        if not still_locked():
            plan.result = Result.LOCK_LOST
            plan.save(plan_path)
            on_event(plan.result)
            return False
        if not _run_wave(io, plan, entries, run):
            return False
    plan.result = Result.APPLIED
    return True


def rollback_plan(io: FleetIO, plan: Plan, plan_path: Path, run_id: str, guard: Guard = nullcontext) -> tuple[int, int]:
    """Restore every group the plan lists as switched (or whose restore failed); returns (restored, failed)."""
    restored = failed = 0
    targets = sorted(
        plan.entries(Outcome.SWITCHED) + plan.entries(Outcome.RESTORE_FAILED),
        key=lambda e: (-e.wave, e.ensemble, e.group),
    )
    for entry in targets:
        if restore(io, entry, f"fleet-scan --rollback of run {plan.run_id} (by run {run_id})", guard):
            entry.outcome = Outcome.RESTORED
            restored += 1
        else:
            entry.outcome = Outcome.RESTORE_FAILED
            failed += 1
        plan.save(plan_path)
    plan.record_rollback(run_id, restored, failed, now_ms())
    plan.save(plan_path)
    return restored, failed


def watch_restored(
    io: FleetIO,
    entries: Sequence[PlanEntry],
    timeout_s: float,
    poll_s: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, list[str]]:
    """Watch restored groups until each has settled back on zookeeper (two clean reads in a row) or
    `timeout_s` passed; returns the problems of those that have not (empty when all settled)."""
    deadline = time.monotonic() + timeout_s
    clean = 0
    while True:
        problems: dict[str, list[str]] = {}
        for e in entries:
            view, facts = io.read(e.ensemble, e.group)
            if found := restore_problems(view, facts):
                problems[f"{e.ensemble}/{e.group}"] = found
        clean = 0 if problems else clean + 1
        if clean >= 2 or time.monotonic() >= deadline:
            return problems
        sleep(poll_s)
