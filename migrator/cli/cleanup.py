"""`migrator cleanup`: archive a finished group's legacy tree and delete it (`--execute`), or put it back
(`--restore FILE --execute`)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import click

from migrator.cli.common import (
    Connection,
    connection_options,
    echo_json,
    find_brokers,
    json_option,
    parse_duration_ms,
    require_group,
)
from migrator.cli.common import zookeeper as open_zookeeper
from migrator.errors import EXIT_OK, MigratorError, RefusedError, UsageError
from migrator.fleet.lock import FleetLock, refuse_if_held
from migrator.names import validate_group
from migrator.ops import cleanup as ops
from migrator.zk import archive as zk_archive
from migrator.zk.session import ZkSession


def _group(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    return None if value is None else validate_group(value)


@click.command("cleanup")
@connection_options()
@click.option("--group", "-g", callback=_group, metavar="GROUP", help="Consumer group (as under /consumers).")
@click.option("--execute", is_flag=True, help="Archive, then delete (or restore); without it, a dry run.")
@click.option("--archive", "archive_path", type=click.Path(dir_okay=False, path_type=Path), metavar="PATH",
              help="Where the archive goes (default: <group>-<UTC time>.json in the current directory).")  # fmt: skip
@click.option("--restore", "restore_path", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Put the group archived in FILE back (with --execute).")  # fmt: skip
@click.option("--abandoned", is_flag=True, help="Clean an abandoned group (no Kafka-offset condition).")
@click.option("--abandoned-after", default="30d", show_default=True, metavar="DURATION",
              help="With --abandoned: how long without an offset commit makes a group abandoned.")  # fmt: skip
@json_option
def cleanup_cmd(
    conn: Connection,
    group: str | None,
    execute: bool,
    archive_path: Path | None,
    restore_path: Path | None,
    abandoned: bool,
    abandoned_after: str,
    as_json: bool,
) -> int:
    """Archive a finished group's tree under /consumers to one JSON file, then delete it.

    Refused (exit 2, nothing deleted) unless the group is finished: no member under ids or migration/ids, no
    owner node, and a Kafka committed offset at or beyond ZooKeeper's for every partition ZooKeeper has one for;
    nor while another fleet-scan or cleanup holds the scanner lock. `--abandoned` cleans a group nobody used for
    --abandoned-after instead (no member, no live Kafka group, no commit). A group protected by `acl protect`
    needs its admin identity (--zk-auth). Dry run unless --execute. `--restore FILE --execute` puts an archived
    group back exactly (data, children, ACLs).

    \b
    Example:
      migrator cleanup -z 127.0.0.1:2181 -g orders
      migrator cleanup -z 127.0.0.1:2181 -g orders --execute --archive /backups/orders.json
      migrator cleanup -z 127.0.0.1:2181 --restore /backups/orders.json --execute
    """
    if restore_path is not None:
        return _restore(conn, group, restore_path, execute, as_json)
    if group is None:
        raise UsageError("--group is required (or --restore FILE)")
    after_s = parse_duration_ms(abandoned_after, "--abandoned-after") / 1000
    rule = ops.Rule.ABANDONED if abandoned else ops.Rule.FINISHED
    path = (archive_path or ops.default_archive_path(group)).absolute()
    if execute and path.exists():
        raise UsageError(f"--archive {path} exists already; nothing was deleted")
    with open_zookeeper(conn) as zk:
        require_group(zk, group)
        brokers = find_brokers(conn, zk, group)
        if brokers.admin is None:
            raise RefusedError(f"cleanup needs Kafka's committed offsets: {brokers.missing}; nothing was deleted")
        with brokers.admin as admin:

            def judged() -> ops.CleanupPlan:
                ids = ops.identities_of(conn.zk_auth)
                plan = ops.plan_cleanup(zk, admin, group, rule=rule, identities=ids, abandoned_after_s=after_s)
                if not plan.allowed:
                    _refused(plan, path, as_json)
                return plan

            plan = judged()  # read-only: a refusal writes nothing, not even the lock
            if not execute:
                refuse_if_held(zk)
                return _dry_run(plan, path, as_json)
            with _lock(zk, group):
                result = ops.execute_cleanup(zk, judged(), path, conn.zookeeper)
    return _done(result, as_json)


def _lock(zk: ZkSession, group: str) -> FleetLock:
    """The scanner lock: no fleet-scan --apply/--rollback/--cleanup or other cleanup runs meanwhile."""
    return FleetLock(zk, f"cleanup {group} {uuid.uuid4().hex[:8]}")


def cleanup_doc(plan: ops.CleanupPlan, path: Path, outcome: ops.Outcome, dry_run: bool) -> dict[str, Any]:
    """`cleanup --json` (`restored`, `not_restored`: what a delete that raced put back, and what it could not)."""
    return {
        "group": plan.group,
        "rule": plan.rule.value,
        "dialect": plan.dialect,
        "dry_run": dry_run,
        "outcome": outcome.value,
        "archive": str(path),
        "nodes": len(plan.tree.nodes),
        "transactions": plan.transactions,
        "paths": plan.paths(),
        "blockers": [{"kind": b.kind.value, "items": list(b.items)} for b in plan.blockers],
        "restored": 0,
        "not_restored": [],
    }


def _refused(plan: ops.CleanupPlan, path: Path, as_json: bool) -> None:
    if as_json:
        echo_json(cleanup_doc(plan, path, ops.Outcome.REFUSED, dry_run=True))
    raise RefusedError(plan.refusal())


def _dry_run(plan: ops.CleanupPlan, path: Path, as_json: bool) -> int:
    if as_json:
        echo_json(cleanup_doc(plan, path, ops.Outcome.DRY_RUN, dry_run=True))
        return EXIT_OK
    click.echo(
        f"group {plan.group}: {plan.rule.value}{f' (dialect {plan.dialect})' if plan.dialect else ''}; "
        f"{len(plan.tree.nodes)} nodes in {plan.transactions} transaction(s)"
    )
    click.echo("\n".join(f"would delete {p}" for p in plan.paths()))
    click.echo(f"dry run: nothing deleted; add --execute to archive the tree to {path} and delete it")
    return EXIT_OK


def _done(result: ops.CleanupResult, as_json: bool) -> int:
    plan, deleted = result.plan, result.deleted
    assert deleted is not None and result.archive is not None
    raced = result.outcome is ops.Outcome.RACED
    if as_json:
        doc = cleanup_doc(plan, result.archive, result.outcome, dry_run=False)
        doc.update(restored=deleted.restored, not_restored=list(deleted.not_restored))
        echo_json(doc)
    else:
        click.echo(f"archive: {result.archive} ({len(plan.tree.nodes)} nodes, written before any delete)")
        if not raced:
            click.echo(f"deleted {zk_archive.absolute(plan.group, '')}: {deleted.removed} nodes in "
                       f"{deleted.transactions} transaction(s); undo: migrator cleanup --restore {result.archive} "
                       "--execute")  # fmt: skip
    if raced:
        raise MigratorError(result.race_line())
    return EXIT_OK


def restore_doc(group: str, path: Path, nodes: int, dry_run: bool) -> dict[str, Any]:
    """`cleanup --restore --json`."""
    return {"group": group, "dry_run": dry_run, "archive": str(path), "nodes": nodes}


def _restore(conn: Connection, group: str | None, path: Path, execute: bool, as_json: bool) -> int:
    archive = zk_archive.read_archive(path)
    if group is not None and group != archive.group:
        raise UsageError(f"--restore {path} holds group {archive.group}, not {group}; nothing was restored")
    identities = ops.identities_of(conn.zk_auth)
    with open_zookeeper(conn) as zk:
        created = ops.restore_archive(zk, archive, identities, dry_run=True)
        if not execute:
            refuse_if_held(zk)
        else:
            with _lock(zk, archive.group):
                created = ops.restore_archive(zk, archive, identities)
    if as_json:
        echo_json(restore_doc(archive.group, path, created, dry_run=not execute))
    elif execute:
        click.echo(f"restored {zk_archive.absolute(archive.group, '')}: {created} nodes from {path}")
    else:
        click.echo(f"dry run: would restore {zk_archive.absolute(archive.group, '')}: {created} nodes from {path}; "
                   "add --execute to write them")  # fmt: skip
    return EXIT_OK


commands: list[click.Command] = [cleanup_cmd]
