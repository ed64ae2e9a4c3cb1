"""`set-mode`, `get-mode` and `history`: the preflight of a switch and the only caller that writes
`migration/mode`; the group's mode as `get-mode` shows it, from one pass of the group reader.

The write (`migrator.zk.modes.write_mode`) is conditional on the znode version read before the preflight
and commits the audit entry in the same transaction: a concurrent change (another operator, a script) makes
it fail instead of silently overriding a decision that was checked against a different state.
"""

from __future__ import annotations

import getpass
import socket
import time
from dataclasses import dataclass, replace

from migrator.coordination.preflight import SwitchCheck, preflight
from migrator.errors import RefusedError
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.kafka.authorization import KafkaNotAuthorized, KafkaRequest, asking
from migrator.ops.dialect import refuse_unrecognised, unrecognised_message
from migrator.ops.groups import require_exists
from migrator.protocol.codecs import AuditEntry, Mode, ModeNode
from migrator.protocol.kafka import KafkaAcl, KafkaGroup
from migrator.zk import modes as zk_modes
from migrator.zk.connect_string import parse_identity
from migrator.zk.group_reader import read_group_with_layout
from migrator.zk.modes import read_history as history
from migrator.zk.session import ZkSession

__all__ = [
    "GroupMode",
    "ModeChange",
    "check_mode",
    "describe_kafka",
    "history",
    "read_group_mode",
    "set_mode",
    "who_am_i",
    "write_mode",
]

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
    before_version: int | None = None
    """The mode node's version when checked (None: absent): the write is conditional on it."""
    dialect: str | None = None
    """`scala` or `pykafka`: the legacy layout of the group's members (None: none, or unrecognised)."""


@dataclass(frozen=True, slots=True)
class GroupMode:
    """A group's mode node as read, when it was last set (None: absent) and its members' dialect (None: none,
    or not recognised)."""

    node: ModeNode
    modified_ms: int | None
    dialect: str | None


def read_group_mode(zk: ZkSession, group: str) -> GroupMode:
    """The mode of an existing group with its dialect, in one pipelined pass of the group reader: NotFound (exit
    3) for a missing group, RefusedError (exit 2) for one whose layout matches neither dialect."""
    view, layout = read_group_with_layout(zk, group, offsets=False)
    require_exists(zk, view)
    refuse_unrecognised(layout, group)
    return GroupMode(view.mode, view.mode_mtime_ms, layout.word)


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


def check_mode(
    zk: ZkSession,
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
        view, layout = read_group_with_layout(zk, group)
        require_exists(zk, view)
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
        group, view.mode, target, check, forced=force and not check.ok, dry_run=dry_run,
        before_version=view.mode_version, dialect=layout.word,
    )  # fmt: skip
    if view.mode.mode is target:
        return replace(change, noop=True)
    if dry_run:
        return change
    if not check.ok and not force:
        raise RefusedError(
            f"refused to set {group} to {target.value}: " + "; ".join(check.refusals) + " (--force overrides)"
        )
    return change


def write_mode(zk: ZkSession, change: ModeChange, *, reason: str = "", who: str = "") -> ModeChange:
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
    written = zk_modes.write_mode(zk, change.group, change.before_version, change.target, entry)
    return replace(
        change, written=True, audit_path=written.audit_path, write_mzxid=written.mzxid, write_monotonic=time.monotonic()
    )


def set_mode(
    zk: ZkSession,
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
