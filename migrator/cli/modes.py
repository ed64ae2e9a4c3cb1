"""`migrator set-mode`, `get-mode` and `history`."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from migrator.cli.common import (
    Connection,
    connection_options,
    echo_json,
    find_brokers,
    group_option,
    json_option,
    require_group,
)
from migrator.cli.common import zookeeper as open_zookeeper
from migrator.cli.interrupts import interrupts_deferred
from migrator.cli.progress import ProgressLine
from migrator.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED, Interrupted, UsageError
from migrator.kafka.admin import KafkaAdmin
from migrator.ops import modes
from migrator.ops.wait import Progress, WaitTimeout, wait_for_switch
from migrator.protocol.codecs import AuditEntry, Mode, ModeNode
from migrator.zk.session import ZkSession


def _mode_text(node: ModeNode) -> str:
    if not node.exists or node.raw is None:
        return "absent"
    return node.raw if node.mode is not None else f"unknown value {node.raw!r}"


def _dialect_text(dialect: str | None) -> str:
    return f"dialect {dialect}" if dialect else "no legacy layout yet"


def _parse_mode(value: str) -> Mode:
    try:
        return Mode(value)
    except ValueError:
        raise UsageError(f"mode must be kafka or zookeeper, not {value!r}; nothing was written") from None


def _iso(ms: int | None) -> str:
    if ms is None:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@click.command("set-mode")
@click.argument("mode", metavar="{kafka|zookeeper}")
@connection_options()
@group_option
@click.option("--force", is_flag=True, help="Write even though the preflight refuses (recorded in the audit trail).")
@click.option(
    "--dry-run", is_flag=True, help="Run the preflight and show exactly what the write would do; write nothing."
)
@click.option(
    "--wait",
    is_flag=True,
    help="Wait (up to --timeout) for a rebalancing Kafka group to settle before the preflight, then until every "
    "bridge obeys the new mode and every partition is owned (a progress line on a terminal).",
)
@click.option(
    "--timeout", type=click.FloatRange(min=0), default=60.0, show_default=True, help="Seconds for each --wait phase."
)
@click.option("--reason", default="", metavar="TEXT", help="Why; recorded in the audit trail (see `history`).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (see docs/operations.md) instead of text.")
def set_mode_cmd(
    mode: str,
    conn: Connection,
    group: str,
    force: bool,
    dry_run: bool,
    wait: bool,
    timeout: float,
    reason: str,
    as_json: bool,
) -> int:
    """Switch the authority a group's bridge connectors obey (writes /consumers/GROUP/migration/mode).

    A preflight refuses (exit 2) when the switch would not take effect everywhere or would cause dual
    ownership: to kafka it needs only bridges, each with its embedded member in the Kafka group, a group
    within group.max.size and a range/roundrobin assignor; to zookeeper it needs no plain Kafka consumers
    in the group. Both directions need to see the Kafka group: without --bootstrap-server the brokers
    registered under /brokers/ids are used, else those the group's bridges published, and when there are
    none the switch is refused. A rebalancing Kafka group is refused (retry in ~10 s) unless --wait, which
    waits for it to settle first. A group that does not exist exits 3. The write is conditional on the
    mode it checked and is recorded with --reason in the audit trail. --dry-run runs the same preflight
    and exits as the write would (0 or 2), writing nothing.

    \b
    Example:
      migrator set-mode kafka -z 127.0.0.1:2181 -g orders -b 127.0.0.1:9092 \\
          --reason "canary ok for 2 days" --wait --timeout 120
      migrator set-mode zookeeper -z 127.0.0.1:2181 -g orders -b 127.0.0.1:9092 --dry-run --json
    """
    target = _parse_mode(mode)
    out = _SetModeOutput(as_json, {"group": group, "to": target.value, "dry_run": dry_run})
    with open_zookeeper(conn) as zk:
        brokers = find_brokers(conn, zk, group)
        if brokers.admin is not None and not conn.bootstrap_servers:
            click.echo(f"brokers: {brokers.source}", err=True)
        change = modes.check_mode(
            zk, group, target, admin=brokers.admin, force=force, dry_run=dry_run,
            kafka_missing=brokers.missing or None, settle_s=timeout if wait else 0.0,
        )  # fmt: skip
        out.checked(change)
        if change.noop or change.dry_run:
            return out.finish(EXIT_OK if change.noop or change.check.ok or force else EXIT_REFUSED)
        try:
            _write_and_watch(
                zk, conn, change, out, reason=reason, timeout=timeout if wait else None, admin=brokers.admin
            )
        except KeyboardInterrupt:
            raise Interrupted(_interrupted(conn, group, change, waiting=wait)) from None
    return out.finish(EXIT_OK)


def _write_and_watch(
    zk: ZkSession,
    conn: Connection,
    change: modes.ModeChange,
    out: _SetModeOutput,
    *,
    reason: str,
    timeout: float | None,
    admin: KafkaAdmin | None,
) -> None:
    """Write the checked change, then (with a `timeout`, i.e. --wait) watch the switch until it is complete."""
    # Ctrl-C from here on lands after the write, whose outcome is then known: the operator is told that the
    # mode IS written and how to roll back, never a bare "interrupted".
    with interrupts_deferred():
        change = modes.write_mode(zk, change, reason=reason, who=modes.who_am_i(conn.zk_auth))
    out.written(change)
    if timeout is None:
        return
    assert change.write_mzxid is not None and change.write_monotonic is not None
    with out.waiting() as show:
        pause = wait_for_switch(
            zk, change.group, change.target, write_mzxid=change.write_mzxid, write_monotonic=change.write_monotonic,
            timeout_s=timeout, admin=admin, on_progress=show,
        )  # fmt: skip
    out.complete(change.target, pause)


class _SetModeOutput:
    """What set-mode says: text lines as it goes, or (--json) one object at the end, also on a --wait
    timeout (then with `switch_complete: false`) so a script always learns whether the mode was written."""

    def __init__(self, as_json: bool, doc: dict[str, Any]) -> None:
        self.as_json = as_json
        self.doc: dict[str, Any] = {
            **doc, "dialect": None, "from": None, "preflight": None, "refusals": [], "warnings": [], "written": False,
            "noop": False, "forced": False, "audit": None, "switch_complete": None, "pause_s": None,
        }  # fmt: skip

    def _say(self, line: str) -> None:
        if not self.as_json:
            click.echo(line)

    def checked(self, change: modes.ModeChange) -> None:
        before, target, group = _mode_text(change.before), change.target.value, change.group
        self.doc |= {"dialect": change.dialect, "from": before, "noop": change.noop}
        self.doc["preflight"] = "ok" if change.check.ok else "refused"
        self.doc |= {"refusals": list(change.check.refusals), "warnings": list(change.check.warnings)}
        for warning in change.check.warnings:
            click.echo(f"warning: {warning}", err=True)
        if change.noop:
            self._say(f"{group}: mode is already {target}; nothing written")
        elif change.dry_run:
            self._say(f"dry run: {group}: {before} -> {target} ({_dialect_text(change.dialect)})")
            if change.check.ok:
                self._say("preflight: ok")
                return
            self._say("preflight: refused" + (" (--force would write anyway)" if change.forced else ""))
            for refusal in change.check.refusals:
                self._say(f"  - {refusal}")

    def written(self, change: modes.ModeChange) -> None:
        self.doc |= {"written": True, "forced": change.forced, "audit": change.audit_path}
        forced = " (forced past: " + "; ".join(change.check.refusals) + ")" if change.forced else ""
        switch = f"{change.group}: {self.doc['from']} -> {change.target.value}{forced}"
        self._say(f"{switch}; audit {change.audit_path}; {_dialect_text(change.dialect)}")

    @contextmanager
    def waiting(self) -> Iterator[Callable[[Progress], None] | None]:
        """A progress line rewritten in place on a terminal's stderr; nothing when stderr is not a terminal."""
        self.doc["switch_complete"] = False
        line = ProgressLine(sys.stderr)
        try:
            yield line.show if line.enabled else None
        except WaitTimeout:
            line.clear()
            self.finish(EXIT_FAILED)
            raise
        finally:
            line.clear()  # also before an interrupt's message

    def complete(self, target: Mode, pause: float) -> None:
        self.doc |= {"switch_complete": True, "pause_s": round(pause, 3)}
        self._say(f"switch complete: every bridge obeys {target.value}; pause {pause:.2f}s")

    def finish(self, code: int) -> int:
        if self.as_json:
            echo_json(self.doc)
        return code


def _interrupted(conn: Connection, group: str, change: modes.ModeChange, *, waiting: bool) -> str:
    """Ctrl-C after the write: the switch is in place and goes on without us; say so, and the way back."""
    back = _mode_text(change.before) if change.before.mode is not None else Mode.ZOOKEEPER.value
    when = "while waiting" if waiting else "after the write"
    return (
        f"interrupted {when}; the mode of {group} IS written ({change.target.value}, audit "
        f"{change.audit_path}) and the bridges follow it without this command. Watch it with `migrator status "
        f"-z {conn.zookeeper} -g {group}`; to roll back: `migrator set-mode {back} -z {conn.zookeeper} -g {group} "
        '--reason "rollback after interrupted switch"`'
    )


def mode_doc(group: str, node: ModeNode, modified_ms: int | None, dialect: str | None) -> dict[str, Any]:
    """`get-mode --json`."""
    return {
        "group": group,
        "dialect": dialect,
        "exists": node.exists,
        "mode": node.mode.value if node.mode else None,
        "raw": node.raw,
        "modified": _iso(modified_ms) if modified_ms is not None else None,
    }


def history_doc(name: str, e: AuditEntry | None) -> dict[str, Any]:
    """One entry of `history --json` (an entry that does not decode: `corrupt`)."""
    if e is None:
        return {"node": name, "corrupt": True}
    return {
        "node": name, "time": _iso(e.timestamp_ms), "timestamp_ms": e.timestamp_ms, "who": e.who,
        "from": e.from_mode, "to": e.to_mode, "forced": e.forced, "reason": e.reason,
    }  # fmt: skip


@click.command("get-mode")
@connection_options(kafka=False)
@group_option
@json_option
def get_mode_cmd(conn: Connection, group: str, as_json: bool) -> int:
    """Show the mode node of a group (absent, kafka, zookeeper, or an unknown value) and the dialect its
    legacy members are written in (scala or pykafka); exit 3 when the group (or the chroot, or /consumers)
    does not exist, 2 when its layout matches neither dialect.

    \b
    Example:
      migrator get-mode -z 127.0.0.1:2181 -g orders
    """
    with open_zookeeper(conn) as zk:
        read = modes.read_group_mode(zk, group)
    node, modified_ms = read.node, read.modified_ms
    if as_json:
        echo_json(mode_doc(group, node, modified_ms, read.dialect))
        return EXIT_OK
    if not node.exists:
        line = f"{group}: absent (no mode node: bridges obey zookeeper)"
    elif node.mode is None:
        line = f"{group}: unknown value {node.raw!r} (bridges obey zookeeper), set {_iso(modified_ms)}"
    else:
        line = f"{group}: {node.raw} (set {_iso(modified_ms)})"
    click.echo(f"{line}; {_dialect_text(read.dialect)}")
    return EXIT_OK


@click.command("history")
@connection_options(kafka=False)
@group_option
@json_option
def history_cmd(conn: Connection, group: str, as_json: bool) -> int:
    """List every set-mode of a group, oldest first: when, who, from, to, forced, reason.

    \b
    Example:
      migrator history -z 127.0.0.1:2181 -g orders --json
    """
    with open_zookeeper(conn) as zk:
        require_group(zk, group)
        entries = modes.history(zk, group)
    if as_json:
        echo_json([history_doc(name, e) for name, e in entries])
        return EXIT_OK
    if not entries:
        click.echo(f"{group}: no set-mode recorded")
    for name, e in entries:
        if e is None:
            click.echo(f"{name}  (does not decode)")
            continue
        forced = "  FORCED" if e.forced else ""
        click.echo(f"{_iso(e.timestamp_ms)}  {e.who}  {e.from_mode or 'absent'} -> {e.to_mode}{forced}  {e.reason}")
    return EXIT_OK


commands: list[click.Command] = [set_mode_cmd, get_mode_cmd, history_cmd]
