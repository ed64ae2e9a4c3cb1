"""The ABANDONED read: for the groups nobody is registered in, their whole tree (the offset nodes' mtime) is
read in one more session, and the lifecycle rule decides (`classify.abandoned`). Runs where the slice runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from migrator.fleet.classify import abandoned, may_be_abandoned
from migrator.fleet.model import FleetRow, KafkaGroupFacts
from migrator.protocol.group_view import GroupView
from migrator.zk.archive import read_tree
from migrator.zk.client import ZkTls, connect


class AbandonedSettings(Protocol):
    """What `mark_abandoned` reads from the scan's settings (`ScanSettings` has them all)."""

    @property
    def abandoned_after_ms(self) -> int | None: ...
    @property
    def now_ms(self) -> int: ...
    @property
    def zk_auth(self) -> str | None: ...
    @property
    def zk_tls(self) -> ZkTls | None: ...
    @property
    def zk_timeout_s(self) -> float: ...


def mark_abandoned(
    ensemble: str,
    rows: Sequence[FleetRow],
    views: Mapping[str, GroupView],
    facts: Mapping[str, KafkaGroupFacts],
    settings: AbandonedSettings,
) -> list[FleetRow]:
    """`rows` with the abandoned ones marked so (unchanged without `abandoned_after_ms` or candidates)."""
    candidates = [r.group for r in rows if may_be_abandoned(r, facts.get(r.group))]
    if settings.abandoned_after_ms is None or not candidates:
        return list(rows)
    zk = connect(ensemble, auth=settings.zk_auth, timeout_s=settings.zk_timeout_s, tls=settings.zk_tls)
    try:
        found = {}
        for group in candidates:
            verdict = abandoned(views[group], read_tree(zk, group), facts[group], settings.now_ms,
                                settings.abandoned_after_ms)  # fmt: skip
            if verdict is not None:
                found[group] = verdict
    finally:
        zk.stop()
        zk.close()
    return [
        replace(r, status=found[r.group].status.value, reasons=list(found[r.group].reasons)) if r.group in found else r
        for r in rows
    ]
