"""An independent observer of a consumer group: what the application processed, who owned what, and the
verdict over both. It reads ZooKeeper but never writes it, so it can watch any group, ours or Scala's.

- `records`: `ProcessingLog` / `Processed` (application threads log each record; JSONL for processes)
- `owners`: `OwnersWatcher` / `OwnerInterval` / `OwnerEvent` (the `/owners` timeline)
- `verdict`: `lost`, `duplicates`, `overlaps`, `owner_violations`, `judge` and `Verdict`
"""

from migrator.observe.owners import OwnerEvent, OwnerInterval, OwnersWatcher
from migrator.observe.records import JsonlTail, Processed, ProcessingLog, load_jsonl, load_many
from migrator.observe.verdict import (
    Duplicate,
    Overlap,
    OwnerViolation,
    Verdict,
    after_commit,
    duplicates,
    judge,
    lost,
    overlaps,
    owner_violations,
)

__all__ = [
    "Duplicate",
    "JsonlTail",
    "Overlap",
    "OwnerEvent",
    "OwnerInterval",
    "OwnerViolation",
    "OwnersWatcher",
    "Processed",
    "ProcessingLog",
    "Verdict",
    "after_commit",
    "duplicates",
    "judge",
    "load_jsonl",
    "load_many",
    "lost",
    "overlaps",
    "owner_violations",
]
