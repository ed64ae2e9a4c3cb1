"""`migrator cleanup`: archive a finished (or abandoned) group's legacy tree, then delete it; and put it back.

The per-group pieces a fleet-wide cleanup reuses: `read_facts` (the whole tree, the group read from it, Kafka's side),
`plan_cleanup` (what would go, and what stands in the way), `archive_plan` (the archive, written and fsynced),
`execute_cleanup` (the race-safe delete) and `restore_archive`. The caller holds the scanner lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Set
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from migrator.errors import MigratorError, NotFound, RefusedError
from migrator.kafka.admin import KafkaAdmin
from migrator.ops.dialect import GroupLayout, refuse_unrecognised
from migrator.protocol.acl import Perm
from migrator.protocol.codecs import decode_offset
from migrator.protocol.lifecycle import (
    DEFAULT_ABANDONED_AFTER_S,
    Blocker,
    BlockerKind,
    GroupFacts,
    GroupTree,
    Rule,
    cleanup_blockers,
    lacking,
    refusal,
)
from migrator.zk import archive as zk_archive
from migrator.zk.client import digest_acl_id
from migrator.zk.connect_string import parse_identity
from migrator.zk.session import ZkSession


def identities_of(auth: str | None) -> frozenset[tuple[str, str]]:
    """The ACL ids a client authenticated with `auth` (--zk-auth) matches: a digest identity's hashed id."""
    identity = parse_identity(auth) if auth else None
    if identity is None:
        return frozenset()
    if identity.scheme == "digest" and auth is not None:
        return frozenset({("digest", digest_acl_id(auth))})
    return frozenset({(identity.scheme, identity.user)}) if identity.user else frozenset()


def read_facts(zk: ZkSession, admin: KafkaAdmin, group: str) -> tuple[GroupFacts, GroupLayout]:
    """Everything the rules decide over, from one read of the group's tree: the group as `status` and the fleet
    scan read it (in its own dialect, pykafka owners included) is the group reader's view of that tree. A group
    absent from ZooKeeper is NotFound (exit 3); a layout neither dialect explains is refused (exit 2)."""
    tree = zk_archive.read_tree(zk, group)
    if not tree.exists:
        raise NotFound(f"group {group} does not exist under /consumers")
    view, layout = zk_archive.view_of_tree(tree)
    layout = refuse_unrecognised(layout, group)
    kafka = admin.describe_group(group)
    committed = admin.committed_offsets(group, sorted(view.offsets), keep_reader=False)
    return GroupFacts(view, tree, kafka, committed), layout


@dataclass(frozen=True, slots=True)
class CleanupPlan:
    """What a cleanup of one group would delete, and what stands in its way (nothing: it may go)."""

    group: str
    rule: Rule
    dialect: str | None
    tree: GroupTree
    blockers: tuple[Blocker, ...]
    transactions: int

    @property
    def allowed(self) -> bool:
        return not self.blockers

    def refusal(self) -> str:
        why = "is protected" if self.blockers[0].kind is BlockerKind.PROTECTED else f"is not {self.rule.value}"
        return refusal(self.group, self.blockers, why) + "; nothing was deleted"

    def paths(self) -> list[str]:
        """The absolute paths it deletes, children first."""
        return [zk_archive.absolute(self.group, n.path) for n in self.tree.children_first()]


def plan_cleanup(
    zk: ZkSession,
    admin: KafkaAdmin,
    group: str,
    *,
    rule: Rule = Rule.FINISHED,
    identities: Set[tuple[str, str]] = frozenset(),
    abandoned_after_s: float = DEFAULT_ABANDONED_AFTER_S,
    now_ms: int | None = None,
) -> CleanupPlan:
    """Read the group and judge it by `rule`, then check that `identities` may delete every node."""
    facts, layout = read_facts(zk, admin, group)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    blockers = cleanup_blockers(
        facts, rule, container_acls=zk_archive.read_acls(zk), identities=identities, now_ms=now_ms,
        abandoned_after_s=abandoned_after_s,
    )  # fmt: skip
    batches = len(zk_archive.transactions(facts.tree))
    return CleanupPlan(group, rule, layout.word, facts.tree, blockers, batches)


def summary(tree: GroupTree) -> dict[str, Any]:
    """What a reader of the archive looks for first: the mode, the ZooKeeper offsets, the audit trail."""
    mode = next((n.data.decode("utf-8", "replace") for n in tree.nodes if n.path == "migration/mode"), None)
    offsets: dict[str, int | str] = {}
    for n in tree.at_depth("offsets", 3):
        try:
            offsets[f"{n.parts[1]}-{n.parts[2]}"] = decode_offset(n.data)
        except MigratorError:
            offsets[f"{n.parts[1]}-{n.parts[2]}"] = n.data.decode("utf-8", "replace")
    audit = [n.data.decode("utf-8", "replace") for n in tree.under("migration", "audit")]
    return {"mode": mode, "offsets": offsets, "audit": audit, "nodes": len(tree.nodes)}


def default_archive_path(group: str, now: float | None = None) -> Path:
    """`<group>-<UTC time>.json` in the current directory (a group name may hold characters a file name
    should not: they become `_`)."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in group)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    return Path(f"{safe}-{stamp}.json")


def archive_plan(plan: CleanupPlan, zookeeper: str, path: Path) -> zk_archive.Archive:
    """Write the plan's tree to `path` (fsynced) before anything is deleted."""
    archive = zk_archive.Archive(plan.tree, int(time.time() * 1000), zookeeper, summary(plan.tree))
    zk_archive.write_archive(path, archive)
    return archive


class Outcome(StrEnum):
    DRY_RUN = "dry-run"
    DELETED = "deleted"
    REFUSED = "refused"
    RACED = "raced"
    """A transaction failed (the group changed while deleting): what was removed was put back."""


@dataclass(frozen=True, slots=True)
class CleanupResult:
    plan: CleanupPlan
    outcome: Outcome
    archive: Path | None = None
    deleted: zk_archive.Deleted | None = None

    def race_line(self) -> str:
        d = self.deleted
        assert d is not None and d.stopped is not None
        where = zk_archive.absolute(self.plan.group, d.at)
        put_back = f"put back the {d.restored} nodes it had removed"
        if d.not_restored:
            put_back += f"; {len(d.not_restored)} were created again by someone else first: {', '.join(d.not_restored)}"
        return (
            f"group {self.plan.group} changed while it was deleted: {where} {d.stopped.value}; stopped after "
            f"{d.transactions} of {self.plan.transactions} transactions and {put_back}; the archive is {self.archive}"
        )


def execute_cleanup(
    zk: ZkSession,
    plan: CleanupPlan,
    archive_path: Path,
    zookeeper: str,
    *,
    between: Callable[[int], None] | None = None,
) -> CleanupResult:
    """Archive the plan's tree, then delete exactly it; refused before anything is written while it has blockers."""
    if not plan.allowed:
        raise RefusedError(plan.refusal())
    archive_plan(plan, zookeeper, archive_path)
    deleted = zk_archive.delete_tree(zk, plan.tree, between=between)
    outcome = Outcome.DELETED if deleted.stopped is None else Outcome.RACED
    return CleanupResult(plan, outcome, archive_path, deleted)


def restore_archive(
    zk: ZkSession, archive: zk_archive.Archive, identities: Set[tuple[str, str]] = frozenset(), dry_run: bool = False
) -> int:
    """Put the archived group back exactly; refused (nothing written) while the group exists or when
    `identities` may not create its protected nodes. Returns the nodes created (`dry_run`: that would be)."""
    zk_archive.refuse_present(zk, archive.group)
    denied = lacking(archive.tree, zk_archive.read_acls(zk), identities, Perm.CREATE)
    if denied:
        raise RefusedError(refusal(archive.group, denied, "is protected") + "; nothing was restored")
    return len(archive.tree.nodes) if dry_run else zk_archive.restore_tree(zk, archive)
