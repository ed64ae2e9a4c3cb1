"""Which groups a fleet cleanup takes, in which waves, and its plan file."""

from __future__ import annotations

from pathlib import Path

from migrator.fleet.cleanup import plan_entries, targets
from migrator.fleet.model import FleetRow, Status
from migrator.fleet.plan import CLEANUP_KIND, CleanOutcome, CleanupRun, Plan, plan_kind
from migrator.protocol.lifecycle import Rule


def rows() -> list[FleetRow]:
    return [
        FleetRow("zk", "done", Status.KAFKA.value, [], members=0, kafka_members=2),
        FleetRow("zk", "bridged", Status.KAFKA.value, [], members=2),
        FleetRow("zk", "cut", Status.CUT_OVER.value, [], kafka_members=1),
        FleetRow("zk", "waiting", Status.CUT_OVER.value, []),
        FleetRow("zk", "old", Status.ABANDONED.value, []),
        FleetRow("zk", "legacy", Status.LEGACY.value, [], members=1),
    ]


def test_finished_groups_are_taken_and_abandoned_ones_only_when_asked():
    assert [(r.group, rule) for r, rule in targets(rows(), abandoned=False)] == [
        ("cut", Rule.FINISHED), ("done", Rule.FINISHED)
    ]  # fmt: skip
    assert [r.group for r, _ in targets(rows(), abandoned=True)] == ["cut", "done", "old"]


def test_entries_are_cut_into_waves_each_with_its_own_archive(tmp_path: Path):
    entries = plan_entries(targets(rows(), abandoned=True), 2, "/archives/")
    assert [(e.group, e.wave) for e in entries] == [("cut", 1), ("done", 1), ("old", 2)]
    assert len({e.archive for e in entries}) == 3 and all(e.archive.startswith("/archives/0000") for e in entries)


def test_a_cleanup_plan_loads_back_and_says_its_kind(tmp_path: Path):
    path = tmp_path / "p.json"
    run = CleanupRun("r", "h", False, 1, groups=plan_entries(targets(rows(), abandoned=True), 2, "/a"))
    run.update([run.groups[0].ended(CleanOutcome.DELETED, "9 nodes", at_ms=5)])
    run.record_rollback("r2", 1, 0, 7)
    run.save(path)
    assert plan_kind(path) == CLEANUP_KIND and CleanupRun.load(path) == run
    new_plan = Plan(run_id="r", holder="h", dry_run=True, started_at_ms=0)
    new_plan.save(tmp_path / "apply.json")
    assert plan_kind(tmp_path / "apply.json") == "apply"
