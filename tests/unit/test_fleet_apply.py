"""Wave logic of `fleet-scan --apply` and `--rollback` over a fake ZooKeeper/Kafka (no cluster)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from migrator.fleet import plan as P
from migrator.fleet.apply import ApplyOptions, apply_waves, plan_waves, rollback_plan, waves
from migrator.fleet.model import FleetRow, KafkaGroupFacts
from migrator.fleet.plan import Plan
from migrator.protocol.codecs import Authority, Mode, ModeNode
from migrator.protocol.partition import TopicPartition as TP

try:
    from tests.unit.test_fleet_classify import authority, kafka_facts, ready_view
except ImportError:  # rootdir-relative import mode without packages
    from test_fleet_classify import authority, kafka_facts, ready_view


class FakeFleet:
    """Groups that behave like bridges: after a switch they publish kafka with a new generation."""

    def __init__(self, groups, converge=True, lag_after=None):
        self.modes: dict[str, str | None] = dict.fromkeys(groups)
        self.converge = converge
        self.lag_after = lag_after or {}
        self.calls: list[tuple[str, str]] = []
        self.group_max_size: dict[str, int | None] = {}

    def read(self, ensemble, group):
        mode = self.modes[group]
        view = replace(ready_view(), group=group, mode=ModeNode.decode(mode.encode()) if mode else ModeNode.absent())
        facts = kafka_facts()
        if mode == "kafka" and self.converge:
            view = replace(view, authorities={c: authority(Authority.KAFKA, 9) for c in ("g_a", "g_b")})
        if mode == "kafka" and group in self.lag_after:
            facts = replace(facts, committed={TP("orders", 0): 5 - 5, TP("orders", 1): 7})
            facts = replace(facts, log_end={TP("orders", 0): self.lag_after[group], TP("orders", 1): 10})
        return view, facts

    def set_mode(self, ensemble, group, target: Mode, reason):
        self.calls.append((group, target.value))
        self.modes[group] = target.value


def rows(names, status="READY"):
    return [FleetRow("zk", n, status, []) for n in names]


def options(**kw):
    return ApplyOptions(**{"wave_size": 2, "wave_interval_s": 0.0, "max_lag_growth": 100, "stable_for_ms": 0, **kw})


def new_plan():
    return Plan(run_id="r1", holder="me", dry_run=False, started_at_ms=0)


def test_waves_take_only_ready_rows_in_order():
    all_rows = rows(["c", "a", "b"]) + rows(["x"], "BLOCKED") + rows(["d"])
    assert [[r.group for r in w] for w in waves(all_rows, 2)] == [["a", "b"], ["c", "d"]]


def test_converging_waves_are_kept(tmp_path: Path):
    fleet = FakeFleet(["a", "b", "c"])
    plan = new_plan()
    entries = plan_waves(plan, rows(["a", "b", "c"]), 2)
    assert apply_waves(fleet, plan, entries, options(), tmp_path / "plan.json", sleep=lambda s: None)
    assert fleet.modes == {"a": "kafka", "b": "kafka", "c": "kafka"}
    saved = Plan.load(tmp_path / "plan.json")
    assert [(g.group, g.wave, g.outcome, g.previous_mode_exists) for g in saved.groups] == [
        ("a", 1, P.Outcome.SWITCHED, False),
        ("b", 1, P.Outcome.SWITCHED, False),
        ("c", 2, P.Outcome.SWITCHED, False),
    ]
    assert saved.groups[0].generations_before == {"g_a": 3, "g_b": 3}


def test_a_wave_that_does_not_converge_is_rolled_back_and_the_run_stops(tmp_path: Path):
    fleet = FakeFleet(["a", "b", "c"], converge=False)
    plan = new_plan()
    entries = plan_waves(plan, rows(["a", "b", "c"]), 2)
    assert not apply_waves(fleet, plan, entries, options(), tmp_path / "plan.json", sleep=lambda s: None)
    assert fleet.modes == {"a": "zookeeper", "b": "zookeeper", "c": None}  # wave 2 never started
    assert [g.outcome for g in plan.groups] == [P.Outcome.ROLLED_BACK, P.Outcome.ROLLED_BACK, P.Outcome.PLANNED]
    assert plan.waves[0].outcome is P.WaveOutcome.ROLLED_BACK


def test_lag_growth_rolls_the_wave_back(tmp_path: Path):
    fleet = FakeFleet(["a", "b"], lag_after={"b": 10_000})
    plan = new_plan()
    entries = plan_waves(plan, rows(["a", "b"]), 2)
    assert not apply_waves(fleet, plan, entries, options(), tmp_path / "plan.json", sleep=lambda s: None)
    assert fleet.modes == {"a": "zookeeper", "b": "zookeeper"}
    assert any("lag-growth" in p for p in plan.waves[0].problems["zk/b"])


def test_a_group_no_longer_ready_is_skipped(tmp_path: Path):
    fleet = FakeFleet(["a"])
    fleet.read = lambda e, g: (replace(ready_view(), group=g), KafkaGroupFacts(group=None, error="down"))
    plan = new_plan()
    entries = plan_waves(plan, rows(["a"]), 2)
    assert apply_waves(fleet, plan, entries, options(), tmp_path / "plan.json", sleep=lambda s: None)
    assert fleet.calls == [] and plan.groups[0].outcome == P.Outcome.SKIPPED


def test_rollback_restores_switched_groups_only(tmp_path: Path):
    fleet = FakeFleet(["a", "b", "c"])
    plan = new_plan()
    entries = plan_waves(plan, rows(["a", "b", "c"]), 2)
    path = tmp_path / "plan.json"
    apply_waves(fleet, plan, entries, options(), path, sleep=lambda s: None)
    plan.groups[2].outcome = P.Outcome.SKIPPED
    plan.save(path)
    fleet.calls.clear()
    loaded = Plan.load(path)
    assert rollback_plan(fleet, loaded, path, "r2") == (2, 0)
    assert sorted(fleet.calls) == [("a", "zookeeper"), ("b", "zookeeper")]
    again = Plan.load(path)
    assert [g.outcome for g in again.groups] == [P.Outcome.RESTORED, P.Outcome.RESTORED, P.Outcome.SKIPPED]
    assert rollback_plan(fleet, again, path, "r3") == (0, 0)  # idempotent


def test_plan_save_never_replaces_a_device(tmp_path: Path):
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        new_plan().save(fifo)
        assert fifo.is_fifo()
        assert b'"run_id": "r1"' in os.read(reader, 65536)
    finally:
        os.close(reader)


def test_no_wave_starts_once_the_lock_may_be_lost(tmp_path: Path):
    fleet = FakeFleet(["a", "b", "c"])
    plan = new_plan()
    entries = plan_waves(plan, rows(["a", "b", "c"]), 2)
    locked = iter([True, False])
    ok = apply_waves(fleet, plan, entries, options(), tmp_path / "p.json", sleep=lambda s: None,
                     still_locked=lambda: next(locked))  # fmt: skip
    assert not ok
    assert fleet.modes == {"a": "kafka", "b": "kafka", "c": None}
    assert "lock" in plan.result


def test_a_converged_wave_stops_watching_before_its_interval(tmp_path: Path):
    fleet = FakeFleet(["a", "b"])
    slept: list[float] = []
    plan = new_plan()
    entries = plan_waves(plan, rows(["a", "b"]), 2)
    assert apply_waves(fleet, plan, entries, options(wave_interval_s=3600.0), tmp_path / "p.json", sleep=slept.append)
    assert len(slept) == 1  # two clean reads, one poll apart


def test_a_rolled_back_wave_names_each_group_and_its_reason_on_screen(tmp_path: Path):
    fleet = FakeFleet(["a", "b"], lag_after={"b": 10_000})
    said: list[str] = []
    plan = new_plan()
    entries = plan_waves(plan, rows(["a", "b"]), 2)
    apply_waves(fleet, plan, entries, options(), tmp_path / "p.json", sleep=lambda s: None, on_event=said.append)
    assert "switched 2 of 2 groups (zk/a, zk/b)" in said[0]
    assert any(line.startswith("  zk/b: rolled_back: lag-growth: lag grew from") for line in said), said
    assert any(line.startswith("  zk/a: rolled_back: ") for line in said), said
    assert plan.result == P.Result.ROLLED_BACK


def test_an_interrupted_write_is_recorded_before_the_interrupt_surfaces(tmp_path: Path):
    """The guard (the CLI's `interrupts_deferred`) raises after the write and its record: the plan names it."""
    from contextlib import contextmanager

    @contextmanager
    def ctrl_c_at_the_end():
        yield
        raise KeyboardInterrupt

    fleet = FakeFleet(["a"])
    plan = new_plan()
    entries = plan_waves(plan, rows(["a"]), 2)
    with pytest.raises(KeyboardInterrupt):
        apply_waves(fleet, plan, entries, options(), tmp_path / "p.json", sleep=lambda s: None, guard=ctrl_c_at_the_end)
    assert fleet.modes == {"a": "kafka"} and plan.entries(P.Outcome.SWITCHED) == plan.groups
    assert plan.names(P.Outcome.SWITCHED) == "zk/a"
