"""The plan file: waves and rollbacks are typed values, written and read in one place, in the version-1 layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from migrator.errors import UsageError
from migrator.fleet.plan import Outcome, Plan, PlanEntry, RollbackRecord, WaveOutcome, WaveRecord

# A plan file as a run before the typed waves wrote it: waves and rollbacks as plain objects.
EARLIER_FILE = {
    "version": 1,
    "run_id": "20261120T000000Z-abcdef",
    "holder": "ops@host pid 1",
    "dry_run": False,
    "started_at_ms": 1,
    "options": {"wave_size": 2},
    "groups": [
        {
            "ensemble": "zk",
            "group": "a",
            "wave": 1,
            "previous_mode": None,
            "previous_mode_exists": False,
            "outcome": "switched",
            "detail": "",
            "lag_before": 3,
            "generations_before": {"c1": 4},
            "switched_at_ms": 5,
            "restored_at_ms": None,
        },
    ],
    "waves": [
        {"wave": 1, "started_at_ms": 2, "groups": 1, "checked_at_ms": 9, "problems": {}, "outcome": "converged"},
        {
            "wave": 2,
            "started_at_ms": 10,
            "groups": 1,
            "checked_at_ms": 12,
            "problems": {"zk/b": ["lag-growth: x"]},
            "outcome": "rolled_back",
        },
        {"wave": 3, "started_at_ms": 13, "groups": 1},
    ],
    "result": "stop",
    "finished_at_ms": None,
    "rollbacks": [{"run_id": "r2", "at_ms": 20, "restored": 1, "failed": 0}],
}


def test_a_plan_file_written_before_typed_waves_loads_as_typed_values(tmp_path: Path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(EARLIER_FILE))
    plan = Plan.load(path)
    assert plan.waves[0] == WaveRecord(1, 2, 1, 9, {}, WaveOutcome.CONVERGED)
    assert plan.waves[1].problems["zk/b"] == ("lag-growth: x",)
    assert plan.waves[2].outcome is None and plan.waves[2].checked_at_ms is None
    assert plan.rollbacks == [RollbackRecord("r2", 20, 1, 0)]
    assert plan.groups[0].outcome is Outcome.SWITCHED


def test_the_layout_written_is_the_one_read_before(tmp_path: Path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(EARLIER_FILE))
    Plan.load(path).save(path)
    assert json.loads(path.read_text()) == EARLIER_FILE


def test_waves_and_rollbacks_are_immutable():
    wave = WaveRecord(1, 0, 2, problems={"zk/a": ["x"]})
    with pytest.raises(AttributeError):
        wave.outcome = WaveOutcome.CONVERGED  # type: ignore[misc]
    with pytest.raises(TypeError):
        wave.problems["zk/b"] = ("y",)  # type: ignore[index]


def test_a_wave_ends_with_its_check_time_problems_and_outcome():
    plan = Plan(run_id="r", holder="h", dry_run=False, started_at_ms=0)
    plan.begin_wave(1, 2, at_ms=10)
    plan.end_wave({"zk/a": ["lag-growth: 1 -> 9"]}, WaveOutcome.ROLLED_BACK, at_ms=20)
    plan.record_rollback("r2", restored=1, failed=1, at_ms=30)
    assert plan.waves == [WaveRecord(1, 10, 2, 20, {"zk/a": ("lag-growth: 1 -> 9",)}, WaveOutcome.ROLLED_BACK)]
    assert plan.rollbacks == [RollbackRecord("r2", 30, 1, 1)]


def test_a_malformed_wave_is_one_usage_error(tmp_path: Path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({**EARLIER_FILE, "waves": [{"wave": 1}]}))
    with pytest.raises(UsageError, match="malformed"):
        Plan.load(path)


_problems = st.dictionaries(st.text(max_size=8), st.lists(st.text(max_size=8), max_size=3).map(tuple), max_size=3)
_watched = st.builds(WaveRecord, st.integers(1, 99), st.integers(0, 2**42), st.integers(0, 99))
_ended = st.builds(
    WaveRecord,
    wave=st.integers(1, 99),
    started_at_ms=st.integers(0, 2**42),
    groups=st.integers(0, 99),
    checked_at_ms=st.integers(0, 2**42),
    problems=_problems,
    outcome=st.sampled_from(WaveOutcome),
)
_waves = _watched | _ended
_rollbacks = st.builds(RollbackRecord, st.text(max_size=8), st.integers(0, 2**42), st.integers(0, 9), st.integers(0, 9))
_entries = st.builds(
    PlanEntry,
    ensemble=st.text(max_size=6),
    group=st.text(max_size=6),
    wave=st.integers(1, 9),
    previous_mode=st.none() | st.text(max_size=6),
    previous_mode_exists=st.booleans(),
    outcome=st.sampled_from(Outcome),
)


@given(st.lists(_waves, max_size=4), st.lists(_rollbacks, max_size=3), st.lists(_entries, max_size=3))
def test_a_saved_plan_loads_back_equal(waves, rollbacks, entries):
    import tempfile

    plan = Plan(run_id="r", holder="h", dry_run=False, started_at_ms=1, groups=entries)
    plan.waves, plan.rollbacks = waves, rollbacks
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plan.json"
        plan.save(path)
        assert Plan.load(path) == plan
