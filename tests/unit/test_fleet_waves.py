"""The waves of a fleet cleanup or cutover: what ends a run after a wave, the order of a rollback, and a cutover
wave's fence-all-then-finish order (its groups' procedures stand in for `migrator cutover`'s)."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from migrator.errors import RefusedError
from migrator.fleet.plan import CleanOutcome, CleanupEntry, CutOutcome, CutoverRun, Result
from migrator.fleet.waves import (
    WaveOutput,
    cut_wave,
    cutover_plan,
    in_wave,
    listed_groups,
    next_after_wave,
    run_waves,
    undo_order,
)
from migrator.protocol.cutover import Direction, Step
from migrator.protocol.lifecycle import Rule

outcomes = st.sampled_from(list(CleanOutcome))


def _entry(i: int, wave: int, outcome: CleanOutcome = CleanOutcome.PLANNED) -> CleanupEntry:
    return CleanupEntry("zk", f"g{i:03d}", wave, Rule.FINISHED, f"/a/{i}.json", outcome)


@given(st.lists(outcomes, max_size=6), st.booleans())
def test_a_run_goes_on_only_after_a_wave_whose_every_group_ended_as_wanted_with_the_lock_held(ends, locked):
    done = [_entry(i, 1, o) for i, o in enumerate(ends)]
    decided = next_after_wave(done, CleanOutcome.DELETED, locked)
    if any(o is not CleanOutcome.DELETED for o in ends):
        assert decided is Result.STOPPED
    else:
        assert decided is (None if locked else Result.LOCK_LOST)


@given(st.lists(st.lists(outcomes, min_size=1, max_size=3), max_size=4), st.integers(0, 5))
def test_waves_run_in_order_until_the_first_with_trouble_or_a_lost_lock(waves, lock_lost_after):
    from migrator.fleet.plan import CleanupRun

    entries = [_entry(i, w + 1) for w, ends in enumerate(waves) for i, _ in enumerate(ends, start=10 * w)]
    plan = CleanupRun("r", "h", False, 0, groups=entries)
    ran, warned, checks = [], [], iter(range(100))

    def one_wave(wave: int, todo: list[CleanupEntry]) -> list[CleanupEntry]:
        ran.append(wave)
        return [e.ended(o, "x") for e, o in zip(todo, waves[wave - 1], strict=True)]

    run_waves(plan, one_wave, CleanOutcome.DELETED, WaveOutput(lambda _: None, warned.append),
              lambda: next(checks) < lock_lost_after)  # fmt: skip
    stopped = next((n for n, ends in enumerate(waves, 1) if set(ends) != {CleanOutcome.DELETED}), None)
    last = min(x for x in (stopped, lock_lost_after + 1, len(waves)) if x is not None)
    assert ran == list(range(1, last + 1))
    if stopped == last:
        assert plan.result is Result.STOPPED
        assert len(warned) == sum(o is not CleanOutcome.DELETED for o in waves[last - 1])
    elif last == lock_lost_after + 1 and last <= len(waves):
        assert plan.result is Result.LOCK_LOST
    else:
        assert plan.result is Result.APPLIED and not warned


@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 50)), unique_by=lambda t: t[1]))
def test_a_rollback_undoes_the_latest_wave_first(placed):
    order = undo_order([_entry(i, wave) for wave, i in placed])
    assert [(-e.wave, e.group) for e in order] == sorted((-w, f"g{i:03d}") for w, i in placed)


def test_a_cutover_file_lists_one_group_a_line_without_blanks_and_comments():
    assert listed_groups("a\n\n  b  \n# c\n#d\ne\n") == ["a", "b", "e"]


class _Procedure:
    """A group's cutover as the wave drives it: each call recorded; `refuse` refuses its first step."""

    def __init__(self, group: str, calls: list[tuple[str, Step | None]], refuse: bool) -> None:
        self.group, self.calls, self.refuse = group, calls, refuse

    def run(self, direction: Direction, *, stop_before: Step | None = None) -> None:
        assert direction is Direction.FORWARD
        if self.refuse:
            raise RefusedError(f"{self.group}: bridges registered")
        self.calls.append((self.group, stop_before))


def test_a_cutover_wave_fences_every_group_before_it_finishes_any(tmp_path: Path):
    calls: list[tuple[str, Step | None]] = []
    plan = cutover_plan("r", "zk", ["a", "b", "c", "d"], 3, 1.0, dry=False)
    cut_wave(plan, tmp_path / "p.json", in_wave(plan.groups, 1), lambda g: _Procedure(g, calls, g == "b"), nullcontext)
    assert calls == [("a", Step.WAIT_EMPTY), ("c", Step.WAIT_EMPTY), ("a", None), ("c", None)]
    assert [e.outcome for e in plan.groups] == [CutOutcome.CUT_OVER, CutOutcome.REFUSED, CutOutcome.CUT_OVER,
                                                CutOutcome.PLANNED]  # fmt: skip
    assert CutoverRun.load(tmp_path / "p.json").groups == plan.groups
