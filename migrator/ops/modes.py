"""`set-mode`, `get-mode` and `history`: the only writer of `migration/mode`.

The mode write is conditional on the znode version read before the preflight, and it is committed in
one ZooKeeper transaction with its audit entry: either both exist or neither, and a concurrent change
(another operator, a script) makes the write fail instead of silently overriding a decision that was
checked against a different state.
"""

from __future__ import annotations

import getpass
import socket
import time
from dataclasses import dataclass, replace

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoAuthError, NodeExistsError, NoNodeError, RolledBackError
from kazoo.protocol.states import ZnodeStat
from kazoo.security import ACL, OPEN_ACL_UNSAFE

from migrator.coordination.preflight import SwitchCheck, preflight
from migrator.errors import CorruptNodeError, MigratorError, NotAuthorised, RefusedError
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.kafka.authorization import KafkaNotAuthorized, KafkaRequest, asking
from migrator.ops.dialect import unrecognised_message
from migrator.protocol.codecs import AuditEntry, Mode, ModeNode
from migrator.protocol.kafka import KafkaAcl, KafkaGroup
from migrator.zk.client import identity_of
from migrator.zk.connect_string import parse_identity
from migrator.zk.group_reader import read_group_with_layout
from migrator.zk.paths import GroupPaths

AUDIT_PREFIX = "entry-"
SETTLE_POLL_S = 0.5


@dataclass(frozen=True, slots=True)
class ModeChange:
    """What set-mode decided and did. `written` is False for a dry run, a refusal or a no-op."""

    group: str
    before: ModeNode
    target: Mode
    check: SwitchCheck
    forced: bool
    dry_run: bool
    written: bool = False
    noop: bool = False
    audit_path: str | None = None
    write_mzxid: int | None = None
    write_monotonic: float | None = None
    before_stat: ZnodeStat | None = None
    """The mode node's stat when checked (None: absent): the write is conditional on its version."""
    dialect: str | None = None
    """`scala` or `pykafka`: the legacy layout of the group's members (None: none, or unrecognised)."""


def who_am_i(zk_auth: str | None) -> str:
    """The digest user when authenticated with one, else user@host: who the audit trail names."""
    identity = parse_identity(zk_auth) if zk_auth else None
    if identity is not None and identity.scheme == "digest":
        return f"{identity.user} (digest)"
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def read_mode(zk: KazooClient, group: str) -> tuple[ModeNode, ZnodeStat | None]:
    try:
        data, stat = zk.get(GroupPaths(group).mode)
    except NoNodeError:
        return ModeNode.absent(), None
    return ModeNode.decode(data), stat


def describe_kafka(
    admin: KafkaAdmin | None, group: str, *, need_max_size: bool, missing: str | None = None
) -> tuple[KafkaGroup | None, int | None, str | KafkaAcl | None]:
    """(group, group.max.size, error): errors become a reason for the preflight, not an exception (a missing
    ACL as the `KafkaAcl` to grant).

    `missing` says why there is no admin (e.g. no brokers found), so the refusal names it."""
    if admin is None:
        return None, None, missing
    try:
        kafka = asking(KafkaRequest.DESCRIBE_GROUP, lambda: admin.describe_group(group), group=group)
        max_size = asking(KafkaRequest.DESCRIBE_BROKER_CONFIGS, admin.group_max_size) if need_max_size else None
    except KafkaNotAuthorized as exc:
        return None, None, exc.acl
    except KafkaUnavailable as exc:
        return None, None, str(exc)
    return kafka, max_size, None


def _acl_of(zk: KazooClient, path: str) -> list[ACL]:
    """New nodes get their parent's ACL, so a group protected by `acl protect` stays protected."""
    try:
        acls, _ = zk.get_acls(path)
    except NoNodeError:
        return list(OPEN_ACL_UNSAFE)
    return list(acls)


def _write(
    zk: KazooClient, paths: GroupPaths, stat: ZnodeStat | None, target: Mode, entry: AuditEntry
) -> tuple[str, int]:
    """Mode and audit entry in one transaction; returns (audit node path, mzxid of the mode write)."""
    try:
        if stat is None:
            zk.ensure_path(paths.migration)
        zk.ensure_path(paths.audit)
        mode_acl = _acl_of(zk, paths.migration) if stat is None else None
        audit_acl = _acl_of(zk, paths.audit)
        tx = zk.transaction()
        if stat is None:
            tx.create(paths.mode, target.value.encode(), acl=mode_acl)
        else:
            tx.set_data(paths.mode, target.value.encode(), version=stat.version)
        tx.create(f"{paths.audit}/{AUDIT_PREFIX}", entry.encode(), acl=audit_acl, sequence=True)
        results = tx.commit()
    except NoAuthError as exc:
        raise NotAuthorised(paths.mode, identity_of(zk)) from exc
    errors = [r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError)]
    if errors:
        err = errors[0]
        if isinstance(err, NoAuthError):
            raise NotAuthorised(paths.mode, identity_of(zk))
        if isinstance(err, BadVersionError | NodeExistsError | NoNodeError):
            raise RefusedError(
                f"{paths.mode} changed while the preflight ran; nothing written, check `migrator get-mode` and retry"
            )
        raise MigratorError(f"writing {paths.mode} failed: {type(err).__name__}")
    audit_path = next(r for r in results if isinstance(r, str) and r.startswith(paths.audit))
    written = zk.exists(paths.mode)
    return audit_path, written.mzxid if written is not None else 0


def check_mode(
    zk: KazooClient,
    group: str,
    target: Mode,
    *,
    admin: KafkaAdmin | None,
    force: bool = False,
    dry_run: bool = False,
    kafka_missing: str | None = None,
    settle_s: float = 0.0,
) -> ModeChange:
    """The preflight of a switch to `target`, writing nothing: raises RefusedError when it refuses (and not
    `force`); a no-op or a dry run says so in the change. `write_mode` then writes what it checked.

    A Kafka group that is rebalancing refuses only until it settles: with `settle_s` the preflight is
    repeated (reading everything again) until it no longer says so or the time is up, then judged as usual.
    A group whose layout matches neither dialect is refused like any other unsafe switch.
    """
    deadline = time.monotonic() + settle_s
    while True:
        before, stat = read_mode(zk, group)
        view, layout = read_group_with_layout(zk, group)
        kafka, max_size, kafka_error = describe_kafka(
            admin, group, need_max_size=target is Mode.KAFKA, missing=kafka_missing
        )
        check = preflight(target, view, kafka, max_size, kafka_error=kafka_error)
        if layout.unrecognised is not None:
            check = replace(check, refusals=(unrecognised_message(group, layout.unrecognised), *check.refusals))
        if not check.settling or dry_run or time.monotonic() >= deadline:
            break
        time.sleep(SETTLE_POLL_S)
    change = ModeChange(
        group, before, target, check, forced=force and not check.ok, dry_run=dry_run, before_stat=stat,
        dialect=layout.word,
    )  # fmt: skip
    if before.mode is target:
        return replace(change, noop=True)
    if dry_run:
        return change
    if not check.ok and not force:
        raise RefusedError(
            f"refused to set {group} to {target.value}: " + "; ".join(check.refusals) + " (--force overrides)"
        )
    return change


def write_mode(zk: KazooClient, change: ModeChange, *, reason: str = "", who: str = "") -> ModeChange:
    """Write a change `check_mode` allowed, with its audit entry, conditional on the mode it checked."""
    assert not (change.noop or change.dry_run), "nothing to write"
    entry = AuditEntry(
        timestamp_ms=int(time.time() * 1000),
        who=who,
        from_mode=change.before.raw if change.before.exists else None,
        to_mode=change.target.value,
        reason=reason,
        forced=change.forced,
    )
    audit_path, mzxid = _write(zk, GroupPaths(change.group), change.before_stat, change.target, entry)
    return replace(change, written=True, audit_path=audit_path, write_mzxid=mzxid, write_monotonic=time.monotonic())


def set_mode(
    zk: KazooClient,
    group: str,
    target: Mode,
    *,
    admin: KafkaAdmin | None,
    force: bool = False,
    dry_run: bool = False,
    reason: str = "",
    who: str = "",
    kafka_missing: str | None = None,
    settle_s: float = 0.0,
) -> ModeChange:
    """`check_mode`, then `write_mode` unless it is a no-op or a dry run."""
    change = check_mode(
        zk, group, target, admin=admin, force=force, dry_run=dry_run, kafka_missing=kafka_missing, settle_s=settle_s
    )
    if change.noop or change.dry_run:
        return change
    return write_mode(zk, change, reason=reason, who=who)


def history(zk: KazooClient, group: str) -> list[tuple[str, AuditEntry | None]]:
    """Audit entries oldest first; an entry that does not decode is listed as None (not hidden)."""
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
