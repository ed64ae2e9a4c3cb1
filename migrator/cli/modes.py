"""`migrator set-mode`, `get-mode` and `history`."""

from __future__ import annotations

import datetime as dt

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
from migrator.errors import EXIT_OK, EXIT_REFUSED, Interrupted, UsageError
from migrator.ops import modes
from migrator.ops.wait import wait_for_switch
from migrator.protocol.codecs import Mode, ModeNode


def _mode_text(node: ModeNode) -> str:
    if not node.exists or node.raw is None:
        return "absent"
    return node.raw if node.mode is not None else f"unknown value {node.raw!r}"


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
@click.option("--dry-run", is_flag=True, help="Show the switch and what preflight refuses or warns of; no write.")
@click.option(
    "--wait",
    is_flag=True,
    help="Wait (up to --timeout) for a rebalancing Kafka group to settle before the preflight, then until every "
    "bridge obeys the new mode and every partition is owned.",
)
@click.option(
    "--timeout", type=click.FloatRange(min=0), default=60.0, show_default=True, help="Seconds for each --wait phase."
)
@click.option("--reason", default="", metavar="TEXT", help="Why; recorded in the audit trail (see `history`).")
def set_mode_cmd(
    mode: str, conn: Connection, group: str, force: bool, dry_run: bool, wait: bool, timeout: float, reason: str
) -> int:
    """Switch the authority a group's bridge connectors obey (writes /consumers/GROUP/migration/mode).

    A preflight refuses (exit 2) when the switch would not take effect everywhere or would cause dual
    ownership: to kafka it needs only bridges, each with its embedded member in the Kafka group, a group
    within group.max.size and a range/roundrobin assignor; to zookeeper it needs no plain Kafka consumers
    in the group. Both directions need to see the Kafka group: without --bootstrap-servers the brokers
    registered under /brokers/ids are used, else those the group's bridges published, and when there are
    none the switch is refused. A rebalancing Kafka group is refused (retry in ~10 s) unless --wait, which
    waits for it to settle first. A group that does not exist exits 3. The write is conditional on the
    mode it checked and is recorded with --reason in the audit trail.

    \b
    Example:
      migrator set-mode kafka -z 127.0.0.1:2181 -g orders -b 127.0.0.1:9092 \\
          --reason "canary ok for 2 days" --wait --timeout 120
      migrator set-mode zookeeper -z 127.0.0.1:2181 -g orders -b 127.0.0.1:9092 --dry-run
    """
    target = _parse_mode(mode)
    with open_zookeeper(conn) as zk:
        require_group(zk, group)
        brokers = find_brokers(conn, zk, group)
        if brokers.admin is not None and not conn.bootstrap_servers:
            click.echo(f"brokers: {brokers.source}", err=True)
        admin = brokers.admin
        change = modes.check_mode(
            zk, group, target, admin=admin, force=force, dry_run=dry_run, kafka_missing=brokers.missing or None,
            settle_s=timeout if wait else 0.0,
        )  # fmt: skip
        before = _mode_text(change.before)
        for warning in change.check.warnings:
            click.echo(f"warning: {warning}", err=True)
        if change.noop:
            click.echo(f"{group}: mode is already {target.value}; nothing written")
            return EXIT_OK
        if change.dry_run:
            click.echo(f"dry run: {group}: {before} -> {target.value}")
            if change.check.ok:
                click.echo("preflight: ok")
                return EXIT_OK
            click.echo("preflight: refused" + (" (--force would write anyway)" if force else ""))
            for refusal in change.check.refusals:
                click.echo(f"  - {refusal}")
            return EXIT_OK if force else EXIT_REFUSED
        try:
            # Ctrl-C from here on lands after the write, whose outcome is then known: the operator is told
            # that the mode IS written and how to roll back, never a bare "interrupted".
            with interrupts_deferred():
                change = modes.write_mode(zk, change, reason=reason, who=modes.who_am_i(conn.zk_auth))
            forced = " (forced past: " + "; ".join(change.check.refusals) + ")" if change.forced else ""
            click.echo(f"{group}: {before} -> {target.value}{forced}; audit {change.audit_path}")
            if wait:
                assert change.write_mzxid is not None and change.write_monotonic is not None
                pause = wait_for_switch(
                    zk, group, target, write_mzxid=change.write_mzxid, write_monotonic=change.write_monotonic,
                    timeout_s=timeout, admin=admin,
                )  # fmt: skip
                click.echo(f"switch complete: every bridge obeys {target.value}; pause {pause:.2f}s")
        except KeyboardInterrupt:
            raise Interrupted(_interrupted(conn, group, change, waiting=wait)) from None
    return EXIT_OK


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


@click.command("get-mode")
@connection_options(kafka=False)
@group_option
@json_option
def get_mode_cmd(conn: Connection, group: str, as_json: bool) -> int:
    """Show the mode node of a group (absent, kafka, zookeeper, or an unknown value); exit 3 when the
    group (or the chroot, or /consumers) does not exist.

    \b
    Example:
      migrator get-mode -z 127.0.0.1:2181 -g orders
    """
    with open_zookeeper(conn) as zk:
        require_group(zk, group)
        node, stat = modes.read_mode(zk, group)
    if as_json:
        echo_json(
            {
                "group": group,
                "exists": node.exists,
                "mode": node.mode.value if node.mode else None,
                "raw": node.raw,
                "modified": _iso(stat.mtime) if stat else None,
            }
        )
        return EXIT_OK
    if not node.exists:
        click.echo(f"{group}: absent (no mode node: bridges obey zookeeper)")
    elif node.mode is None:
        click.echo(f"{group}: unknown value {node.raw!r} (bridges obey zookeeper), set {_iso(stat and stat.mtime)}")
    else:
        click.echo(f"{group}: {node.raw} (set {_iso(stat and stat.mtime)})")
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
        echo_json(
            [
                {"node": name, "corrupt": True}
                if e is None
                else {
                    "node": name,
                    "time": _iso(e.timestamp_ms),
                    "timestamp_ms": e.timestamp_ms,
                    "who": e.who,
                    "from": e.from_mode,
                    "to": e.to_mode,
                    "forced": e.forced,
                    "reason": e.reason,
                }
                for name, e in entries
            ]
        )
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
