"""The mode node (`migration/mode`) and its audit trail (`migration/audit`): versioned reads and the one
transaction that writes both.

The write is conditional on the version read before the caller's checks, and the mode and its audit entry
are committed together: either both exist or neither, and a concurrent change makes the write fail with
`ModeChangedMeanwhile` instead of silently overriding a decision checked against a different state.
"""

from __future__ import annotations

from dataclasses import dataclass

from kazoo.exceptions import BadVersionError, NoAuthError, NodeExistsError, NoNodeError, RolledBackError
from kazoo.security import ACL, OPEN_ACL_UNSAFE

from migrator.errors import CorruptNodeError, MigratorError, NotAuthorised, RefusedError
from migrator.protocol.codecs import AuditEntry, Mode
from migrator.zk.client import identity_of
from migrator.zk.paths import GroupPaths
from migrator.zk.session import ZkSession, stat_of

AUDIT_PREFIX = "entry-"


class ModeChangedMeanwhile(RefusedError):
    """The mode node is not at the version the write was conditional on (changed, created or deleted):
    nothing was written."""


@dataclass(frozen=True, slots=True)
class ModeWritten:
    audit_path: str
    """The audit entry committed with the mode."""
    mzxid: int
    """The transaction id of the mode write (0 if the node was gone again when read back)."""


def _acl_of(zk: ZkSession, path: str) -> list[ACL]:
    """New nodes get their parent's ACL, so a group protected by `acl protect` stays protected."""
    try:
        acls, _ = zk.get_acls(path)
    except NoNodeError:
        return list(OPEN_ACL_UNSAFE)
    return list(acls)


def _commit(zk: ZkSession, paths: GroupPaths, version: int | None, target: Mode, entry: AuditEntry) -> list[object]:
    """The transaction's results, one per operation (an exception for each that failed)."""
    if version is None:
        zk.ensure_path(paths.migration)
    zk.ensure_path(paths.audit)
    mode_acl = _acl_of(zk, paths.migration) if version is None else None
    audit_acl = _acl_of(zk, paths.audit)
    tx = zk.transaction()
    if version is None:
        tx.create(paths.mode, target.value.encode(), acl=mode_acl)
    else:
        tx.set_data(paths.mode, target.value.encode(), version=version)
    tx.create(f"{paths.audit}/{AUDIT_PREFIX}", entry.encode(), acl=audit_acl, sequence=True)
    results: list[object] = tx.commit()
    return results


def _raise_first_failure(zk: ZkSession, paths: GroupPaths, results: list[object]) -> None:
    errors = [r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError)]
    if not errors:
        return
    err = errors[0]
    if isinstance(err, NoAuthError):
        raise NotAuthorised(paths.mode, identity_of(zk))
    if isinstance(err, BadVersionError | NodeExistsError | NoNodeError):
        raise ModeChangedMeanwhile(
            f"{paths.mode} changed while the preflight ran; nothing written, check `migrator get-mode` and retry"
        )
    raise MigratorError(f"writing {paths.mode} failed: {type(err).__name__}")


def write_mode(zk: ZkSession, group: str, version: int | None, target: Mode, entry: AuditEntry) -> ModeWritten:
    """Mode and audit entry in one transaction, conditional on the mode node's `version` as read (None: it must
    still be absent). Raises `ModeChangedMeanwhile` or `NotAuthorised`."""
    paths = GroupPaths(group)
    try:
        results = _commit(zk, paths, version, target, entry)
    except NoAuthError as exc:
        raise NotAuthorised(paths.mode, identity_of(zk)) from exc
    _raise_first_failure(zk, paths, results)
    audit_path = next(r for r in results if isinstance(r, str) and r.startswith(paths.audit))
    written = stat_of(zk, paths.mode)
    return ModeWritten(audit_path, written.mzxid if written is not None else 0)


def read_history(zk: ZkSession, group: str) -> list[tuple[str, AuditEntry | None]]:
    """Audit entries oldest first, read in one pipelined round trip; an entry that does not decode is listed
    as None (not hidden)."""
    paths = GroupPaths(group)
    try:
        names = sorted(zk.get_children(paths.audit))
    except NoNodeError:
        return []
    results = [(name, zk.get_async(f"{paths.audit}/{name}")) for name in names]
    entries: list[tuple[str, AuditEntry | None]] = []
    for name, result in results:
        try:
            data, _ = result.get()
        except NoNodeError:
            continue
        try:
            entries.append((name, AuditEntry.decode(data)))
        except CorruptNodeError:
            entries.append((name, None))
    return entries
