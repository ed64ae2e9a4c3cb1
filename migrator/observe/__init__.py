"""An independent observer of a consumer group: what the application processed, who owned what, and the
verdict over both. It reads ZooKeeper but never writes it, so it can watch any group, ours or Scala's.

- `records`: `ProcessingLog` / `Processed` (application threads log each record; JSONL for processes)
- `owners`: `OwnersWatcher` / `OwnerInterval` / `OwnerEvent` (the `/owners` timeline)
- `commits`: `CommitsWatcher` / `Commit` (the `/offsets` writes, in ZooKeeper's order)
- `verdict`: `lost`, `duplicates`, `overlaps`, `owner_violations`, `judge` and `Verdict`; `after_commit` and
  `claimed_below_commit` say which duplicates are expected
"""

from migrator.observe.commits import Commit, CommitsWatcher
from migrator.observe.owners import OwnerEvent, OwnerInterval, OwnersWatcher
from migrator.observe.records import JsonlTail, Processed, ProcessingLog, load_jsonl, load_many
from migrator.observe.verdict import (
    Duplicate,
    Overlap,
    OwnerViolation,
    Verdict,
    after_commit,
    claimed_below_commit,
    duplicates,
    judge,
    lost,
    overlaps,
    owner_violations,
)

__all__ = [
    "Commit",
    "CommitsWatcher",
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
    "claimed_below_commit",
    "duplicates",
    "judge",
    "load_jsonl",
    "load_many",
    "lost",
    "overlaps",
    "owner_violations",
]
