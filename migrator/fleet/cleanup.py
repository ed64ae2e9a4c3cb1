"""Cleaning a fleet in waves: which groups go (pure), and the per-group archive-then-delete each Spark task runs
with `migrator cleanup`'s own functions (`migrator.ops.cleanup`), so the fleet decides as the command does.

The caller holds the scanner lock. A task re-reads and re-judges every group of its wave (the scan is minutes
old by then): a group that gained a member meanwhile is refused, not deleted.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migrator.errors import MigratorError
from migrator.fleet.model import FleetRow, Status
from migrator.fleet.plan import CleanOutcome, CleanupEntry
from migrator.fleet.readiness import Stage, stage_and_step
from migrator.kafka.admin import KafkaAdmin
from migrator.ops import cleanup as ops
from migrator.protocol.lifecycle import Rule
from migrator.zk.archive import read_archive
from migrator.zk.client import ZkTls, connect
from migrator.zk.session import close


def targets(rows: Sequence[FleetRow], abandoned: bool) -> list[tuple[FleetRow, Rule]]:
    """Finished groups (and with `abandoned` the ABANDONED ones), sorted by (ensemble, group)."""
    found = []
    for row in sorted(rows, key=lambda r: (r.ensemble, r.group)):
        if stage_and_step(row)[0] is Stage.FINISHED:
            found.append((row, Rule.FINISHED))
        elif abandoned and row.state is Status.ABANDONED:
            found.append((row, Rule.ABANDONED))
    return found


def plan_entries(chosen: Sequence[tuple[FleetRow, Rule]], wave_size: int, archive_dir: str) -> list[CleanupEntry]:
    """One entry per group, cut into waves, each with its archive's path (`archive_dir/<n>-<group>.json`)."""
    return [
        CleanupEntry(row.ensemble, row.group, i // wave_size + 1, rule, f"{archive_dir.rstrip('/')}/{_file(i, row)}")
        for i, (row, rule) in enumerate(chosen)
    ]


def _file(index: int, row: FleetRow) -> str:
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in row.group)
    return f"{index:06d}-{safe}.json"


@dataclass(frozen=True)
class CleanSettings:
    """What an executor needs to clean groups; small and picklable."""

    bootstrap: dict[str, str | None]
    zk_auth: str | None
    zk_tls: ZkTls | None
    kafka_properties: dict[str, str]
    timeout_s: float
    abandoned_after_s: float
    now_ms: int


def clean_slice(entries: Iterable[CleanupEntry], settings: CleanSettings) -> Iterator[CleanupEntry]:
    """Each entry archived and deleted (or refused, raced, failed), with one ZooKeeper session and one Kafka
    admin client per ensemble of the slice."""
    by_ensemble: dict[str, list[CleanupEntry]] = {}
    for entry in entries:
        by_ensemble.setdefault(entry.ensemble, []).append(entry)
    identities = ops.identities_of(settings.zk_auth)
    for ensemble, mine in by_ensemble.items():
        zk = connect(ensemble, auth=settings.zk_auth, timeout_s=settings.timeout_s, tls=settings.zk_tls)
        admin = KafkaAdmin(settings.bootstrap.get(ensemble) or "", settings.kafka_properties, settings.timeout_s)
        try:
            for entry in mine:
                yield _clean_one(zk, admin, entry, identities, settings)
        finally:
            admin.close()
            close(zk)


def _clean_one(
    zk: Any, admin: KafkaAdmin, entry: CleanupEntry, identities: frozenset[tuple[str, str]], settings: CleanSettings
) -> CleanupEntry:
    try:
        plan = ops.plan_cleanup(zk, admin, entry.group, rule=entry.rule, identities=identities,
                                abandoned_after_s=settings.abandoned_after_s, now_ms=settings.now_ms)  # fmt: skip
        if not plan.allowed:
            return entry.ended(CleanOutcome.REFUSED, plan.refusal())
        Path(entry.archive).parent.mkdir(parents=True, exist_ok=True)
        result = ops.execute_cleanup(zk, plan, Path(entry.archive), entry.ensemble)
    except (MigratorError, OSError) as exc:  # OSError: the archive could not be written, nothing was deleted
        return entry.ended(CleanOutcome.FAILED, str(exc))
    if result.outcome is ops.Outcome.RACED:
        return entry.ended(CleanOutcome.RACED, result.race_line())
    return entry.ended(CleanOutcome.DELETED, f"{len(plan.tree.nodes)} nodes", at_ms=int(time.time() * 1000))


def restore_entry(zk: Any, entry: CleanupEntry, zk_auth: str | None) -> CleanupEntry:
    """Put one cleaned group back from its archive (`--rollback`)."""
    try:
        ops.restore_archive(zk, read_archive(Path(entry.archive)), ops.identities_of(zk_auth))
    except MigratorError as exc:
        return entry.ended(CleanOutcome.RESTORE_FAILED, str(exc))
    return entry.ended(CleanOutcome.RESTORED, entry.detail, at_ms=int(time.time() * 1000))
