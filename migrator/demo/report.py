"""The demo's verdict over the whole run: the safety properties of CONTRACT §6 and the pause of each step,
as a table for the terminal and a JSON document for machines."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from migrator.demo.steps import Step
from migrator.demo.workload import MemberInfo
from migrator.observe import OwnerInterval, Processed
from migrator.observe.pause import pauses, summary
from migrator.observe.verdict import Verdict, judge, owner_violations


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict  # loss, duplicates and overlaps over every record
    owner_violations: int  # records of ZooKeeper-owner-holding members processed outside their ownership
    member_errors: list[str]

    @property
    def duplicates(self) -> int:
        return len(self.verdict.duplicates)  # every transition is clean: any duplicate is a failure

    @property
    def ok(self) -> bool:
        v = self.verdict
        return not (v.lost or v.duplicates or v.overlaps or self.owner_violations or self.member_errors)


def judge_run(
    produced: Collection[tuple],
    records: Sequence[Processed],
    ownership: Iterable[OwnerInterval],
    members: Mapping[str, MemberInfo],
    member_errors: list[str],
) -> Outcome:
    """Plain Kafka consumers own partitions through Kafka, not ZooKeeper: only the records of legacy
    connectors and bridges can be checked against the owners timeline; everything else checks all records."""
    zk_members = {m.consumer_id for m in members.values() if m.kind.in_zookeeper}
    checked = [r for r in records if r.member in zk_members]
    return Outcome(judge(produced, records), len(owner_violations(ownership, checked)), member_errors)


def step_pauses(steps: Sequence[Step], records: Sequence[Processed], partitions: int) -> list[float | None]:
    """The authoritative pauses: each window ends at the next step's trigger (`migrator.observe.pause`)."""
    return [p.seconds if p else None for p in pauses([s.trigger_ns for s in steps], records, partitions)]


def table(outcome: Outcome, steps: Sequence[Step], step_pause: Sequence[float | None]) -> str:
    v = outcome.verdict
    rows = [
        ("records produced", f"{v.produced}", ""),
        ("records processed", f"{v.processed}", ""),
        ("lost", f"{len(v.lost)}", "ok" if not v.lost else "FAILED"),
        ("duplicated", f"{outcome.duplicates}", "ok" if not outcome.duplicates else "FAILED"),
        ("dual processing (overlaps)", f"{len(v.overlaps)}", "ok" if not v.overlaps else "FAILED"),
        (
            "processed without ownership",
            f"{outcome.owner_violations}",
            "ok" if not outcome.owner_violations else "FAILED",
        ),
    ]
    if outcome.member_errors:
        rows.append(("member errors", f"{len(outcome.member_errors)}", "FAILED"))
    measured = [p for p in step_pause if p is not None]
    stats = summary(measured)
    width = max(len(r[0]) for r in rows)
    lines = ["", "verdict", "-" * (width + 20)]
    lines += [f"{name:<{width}}  {value:>9}  {status}" for name, value, status in rows]
    lines += ["", "pause per step (s)", "-" * (width + 20)]
    for s, p in zip(steps, step_pause, strict=True):
        lines.append(
            f"[{s.number:2d}] {s.action:<{width + 6}} {p:6.2f}"
            if p is not None
            else f"[{s.number:2d}] {s.action:<{width + 6}}    n/a"
        )
    if measured:
        lines.append(f"median {stats['median_s']:.2f}s, max {stats['max_s']:.2f}s over {len(measured)} steps")
    lines += ["", "RESULT: " + ("every safety property held" if outcome.ok else "SAFETY PROPERTY FAILED")]
    return "\n".join(lines)


def document(
    outcome: Outcome,
    steps: Sequence[Step],
    step_pause: Sequence[float | None],
    settings: Mapping[str, Any],
    files: Mapping[str, str | None],
) -> dict[str, Any]:
    v = outcome.verdict
    measured = [p for p in step_pause if p is not None]
    return {
        "ok": outcome.ok,
        "settings": dict(settings),
        "verdict": {
            "produced": v.produced,
            "processed": v.processed,
            "lost": len(v.lost),
            "duplicates": outcome.duplicates,
            "overlaps": len(v.overlaps),
            "owner_violations": outcome.owner_violations,
            "member_errors": outcome.member_errors,
            "details": v.summary() if not outcome.ok else "",
        },
        "steps": [{**asdict(s), "pause_s": p} for s, p in zip(steps, step_pause, strict=True)],
        "pause_summary": summary(measured) if measured else {},
        "files": dict(files),
    }


def write_json(path: Path, doc: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
