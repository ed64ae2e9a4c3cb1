"""The second read of the groups nobody is registered in: their whole tree (ACLs, stats, audit trail), read in
one more session, decides CUT_OVER (`classify.cut_over`: the fence and the audit entry) and ABANDONED
(`classify.abandoned`: the offset nodes' mtime). Runs where the slice runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from migrator.fleet.classify import abandoned, cut_over, finished, may_be_abandoned, may_be_cut_over
from migrator.fleet.model import Classification, FleetRow, KafkaGroupFacts
from migrator.protocol.group_view import GroupView
from migrator.protocol.lifecycle import GroupTree
from migrator.zk.archive import read_tree
from migrator.zk.client import ZkTls, connect
from migrator.zk.session import close


class TreeSettings(Protocol):
    """What `mark_from_trees` reads from the scan's settings (`ScanSettings` has them all)."""

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


def mark_from_trees(
    ensemble: str,
    rows: Sequence[FleetRow],
    views: Mapping[str, GroupView],
    facts: Mapping[str, KafkaGroupFacts],
    settings: TreeSettings,
) -> list[FleetRow]:
    """`rows` with the cut-over and the abandoned groups marked so (unchanged when there is no candidate)."""
    candidates = [r.group for r in rows if may_be_cut_over(r) or may_be_abandoned(r, facts.get(r.group))]
    if not candidates:
        return list(rows)
    by_group = {r.group: r for r in rows}
    zk = connect(ensemble, auth=settings.zk_auth, timeout_s=settings.zk_timeout_s, tls=settings.zk_tls)
    try:
        found = {}
        for group in candidates:
            verdict = _decide(by_group[group], views[group], read_tree(zk, group), facts.get(group), settings)
            if verdict is not None:
                found[group] = verdict
    finally:
        close(zk)
    return [
        replace(r, status=found[r.group].status.value, reasons=list(found[r.group].reasons)) if r.group in found else r
        for r in rows
    ]


def _decide(
    row: FleetRow, view: GroupView, tree: GroupTree, kafka: KafkaGroupFacts | None, settings: TreeSettings
) -> Classification | None:
    found = cut_over(view, tree, kafka)
    if found is None and kafka is not None:
        found = finished(view, tree, kafka)
    if found is None and settings.abandoned_after_ms is not None and kafka is not None:
        found = abandoned(view, tree, kafka, settings.now_ms, settings.abandoned_after_ms)
    return found
