"""`migrator offsets export|import|diff|sync`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from migrator.cli.common import (
    Brokers,
    Connection,
    connection_options,
    echo_json,
    find_brokers,
    group_option,
    json_option,
)
from migrator.cli.common import zookeeper as open_zookeeper
from migrator.errors import EXIT_OK, MigratorError, RefusedError, UsageError
from migrator.kafka.admin import KafkaAdmin
from migrator.names import validate_topic
from migrator.ops import offsets as ops
from migrator.ops import reset
from migrator.protocol.partition import TopicPartition
from migrator.protocol.stores import OffsetStore
from migrator.table import align
from migrator.zk.brokers import topic_partitions
from migrator.zk.group_reader import read_group
from migrator.zk.session import ZkSession


class _StoreChoice(click.Choice):
    """`zookeeper` or `kafka`, given to the command as an `OffsetStore`."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> OffsetStore:
        return OffsetStore(super().convert(value, param, ctx))


store_choice = _StoreChoice([store.value for store in OffsetStore])


def _topics(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(validate_topic(v) for v in values)


topic_option = click.option(
    "--topic", "-t", "topics", multiple=True, callback=_topics, help="Only these topics (repeatable); also adds "
    "topics the group has no ZooKeeper trace of to a Kafka read.",
)  # fmt: skip


def _admin(brokers: Brokers, why: str) -> KafkaAdmin:
    if brokers.admin is None:
        raise UsageError(f"{why} needs Kafka: {brokers.missing}; give --bootstrap-servers")
    return brokers.admin


def _partitions(zk: ZkSession, admin: KafkaAdmin | None, topics: set[str]) -> dict[str, tuple[int, ...] | None]:
    """Each topic's partitions from the brokers, else from /brokers/topics (a ZooKeeper-mode cluster)."""
    return {t: admin.partitions(t) if admin is not None else topic_partitions(zk, t) for t in sorted(topics)}


def _check_output(output: str | None) -> None:
    """Before connecting: an export whose file cannot be written would read everything for nothing."""
    if output is None:
        return
    parent = Path(output).parent
    if not parent.is_dir():
        raise UsageError(f"--output {output}: directory {parent} does not exist; nothing was written")


def _show_plan(plan: dict, target: OffsetStore, execute: bool, as_json: bool) -> None:
    if as_json:
        return
    verb = "writing" if execute else "would write"
    for tp, off in sorted(plan.items()):
        click.echo(f"{verb} {target} {tp.topic} {tp.partition} {off}")


def plan_doc(group: str, target: OffsetStore, plan: dict, execute: bool, dialect: str | None = None) -> dict[str, Any]:
    """The --json report of an offsets write (or its dry run): what is (or would be) written where."""
    rows = [{"topic": tp.topic, "partition": tp.partition, "offset": off} for tp, off in sorted(plan.items())]
    return {"group": group, "dialect": dialect, "store": target, "dry_run": not execute,
            "written": execute and bool(plan), "offsets": rows}  # fmt: skip


def execute_or_dry_run(execute: bool, dry_run: bool) -> bool:
    """The rule of every offsets writer: a dry run unless --execute; both at once is a mistake."""
    if execute and dry_run:
        raise UsageError("--execute and --dry-run contradict each other")
    return execute


execute_option = click.option("--execute", is_flag=True, help="Write. Without it nothing is written (a dry run).")
dry_run_option = click.option(
    "--dry-run", is_flag=True, help="Run every check the write runs and show what it would write (the default)."
)


@click.group("offsets")
def offsets_group() -> None:
    """Export, import, compare, synchronise and reset committed offsets in ZooKeeper and Kafka.

    Writers (import, sync, reset) are dry runs unless --execute.
    """


@offsets_group.command("export")
@connection_options()
@group_option
@click.option("--store", type=store_choice, required=True, help="Which store to read.")
@click.option("--format", "fmt", type=click.Choice(ops.FORMATS), default="json", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="File (default: stdout).")
@topic_option
def export_cmd(
    conn: Connection, group: str, store: OffsetStore, fmt: str, output: str | None, topics: tuple[str, ...]
) -> int:
    """Write a group's committed next offsets (topic, partition, offset) as JSON or CSV.

    \b
    Example:
      migrator offsets export -z 127.0.0.1:2181 -g orders --store zookeeper --format csv -o orders.csv
      migrator offsets export -z 127.0.0.1:2181 -g orders --store kafka -b 127.0.0.1:9092
    """
    _check_output(output)
    with open_zookeeper(conn) as zk:
        view, _ = ops.read_checked(zk, group, {store}, f"offsets export --store {store}")
        brokers = find_brokers(conn, zk, view)
        admin = _admin(brokers, "--store kafka") if store is OffsetStore.KAFKA else brokers.admin
        ops.check_topics(_partitions(zk, admin, set(topics)))
        offsets = ops.store_offsets(store, view, admin, topics)
    text = ops.encode(offsets, fmt, group=group, store=store)
    if output:
        try:
            with open(output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise MigratorError(f"--output {output}: {exc.strerror or exc}") from exc
        click.echo(f"{group}: {len(offsets)} {store} offsets written to {output}", err=True)
    else:
        click.echo(text, nl=False)
    return EXIT_OK


@offsets_group.command("import")
@connection_options()
@group_option
@click.option("--store", type=store_choice, required=True, help="Which store to write.")
@click.option("--input", "-i", "input_path", type=click.Path(exists=True, dir_okay=False), required=True)
@execute_option
@dry_run_option
@json_option
def import_cmd(
    conn: Connection, group: str, store: OffsetStore, input_path: str, execute: bool, dry_run: bool, as_json: bool
) -> int:
    """Write offsets from an export file. The whole file is validated first, including that every topic
    and partition exists (from the brokers, else from /brokers/topics): a bad line exits 2 and nothing is
    written. Kafka needs an empty Kafka group (the broker refuses commits otherwise). The group may be new.
    A dry run (the default) runs the same checks and shows what --execute would write.

    \b
    Example:
      migrator offsets import -z 127.0.0.1:2181 -g orders --store kafka -b 127.0.0.1:9092 \\
          -i orders.csv --execute
    """
    execute = execute_or_dry_run(execute, dry_run)
    try:
        with open(input_path, encoding="utf-8") as f:
            offsets = ops.parse(f.read())
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--input {input_path}: cannot be read: {exc}") from exc
    with open_zookeeper(conn) as zk:
        _, layout = ops.read_checked(zk, group, {store}, f"offsets import --store {store}", must_exist=False)
        brokers = find_brokers(conn, zk, group)
        admin = _admin(brokers, "--store kafka") if store is OffsetStore.KAFKA else brokers.admin
        ops.check_partitions(offsets, _partitions(zk, admin, {tp.topic for tp in offsets}))
        if store is OffsetStore.KAFKA:
            assert admin is not None
            ops.require_empty_kafka_group(admin, group)
        _show_plan(offsets, store, execute, as_json)
        if execute:
            _write(zk, admin, group, store, offsets)
    if as_json:
        echo_json(plan_doc(group, store, offsets, execute, layout.word))
    elif execute:
        click.echo(f"{group}: {len(offsets)} offsets written to {store}")
    else:
        click.echo(f"dry run: {len(offsets)} offsets; add --execute to write them")
    return EXIT_OK


def _write(zk: ZkSession, admin: KafkaAdmin | None, group: str, store: OffsetStore, offsets: ops.Offsets) -> None:
    if store is OffsetStore.KAFKA:
        assert admin is not None
        ops.write_kafka(admin, group, offsets)
    else:
        ops.write_zookeeper(zk, group, offsets)


def diff_doc(r: ops.DiffRow) -> dict[str, Any]:
    """One row of `offsets diff --json`."""
    return {"topic": r.partition.topic, "partition": r.partition.partition, "zookeeper": r.zookeeper,
            "kafka": r.kafka, "delta": r.delta, "state": r.state}  # fmt: skip


@offsets_group.command("diff")
@connection_options()
@group_option
@topic_option
@json_option
def diff_cmd(conn: Connection, group: str, topics: tuple[str, ...], as_json: bool) -> int:
    """Compare ZooKeeper and Kafka committed offsets per partition (delta = kafka - zookeeper).

    \b
    Example:
      migrator offsets diff -z 127.0.0.1:2181 -g orders -b 127.0.0.1:9092
    """
    with open_zookeeper(conn) as zk:
        view, _ = ops.read_checked(zk, group, {OffsetStore.ZOOKEEPER}, "offsets diff (ZooKeeper against Kafka)")
        admin = _admin(find_brokers(conn, zk, view), "offsets diff")
        ops.check_topics(_partitions(zk, admin, set(topics)))
        zk_offsets = ops.store_offsets(OffsetStore.ZOOKEEPER, view, admin, topics)
        kafka_offsets = ops.store_offsets(OffsetStore.KAFKA, view, admin, topics)
    rows = ops.diff(zk_offsets, kafka_offsets)
    if as_json:
        echo_json([diff_doc(r) for r in rows])
        return EXIT_OK
    if not rows:
        click.echo(f"{group}: no committed offsets in either store")
        return EXIT_OK
    header = ("partition", "zookeeper", "kafka", "delta", "state")
    body = [(r.partition, r.zookeeper, r.kafka, r.delta, r.state) for r in rows]
    click.echo("\n".join(align([header, *body], right=(1, 2, 3))))
    return EXIT_OK


@offsets_group.command("sync")
@connection_options()
@group_option
@click.option("--from", "source", type=store_choice, required=True)
@click.option("--to", "target", type=store_choice, required=True)
@execute_option
@dry_run_option
@topic_option
@json_option
def sync_cmd(
    conn: Connection,
    group: str,
    source: OffsetStore,
    target: OffsetStore,
    execute: bool,
    dry_run: bool,
    topics: tuple[str, ...],
    as_json: bool,
) -> int:
    """Bring the target store up to max(source, target) per partition; nothing moves backwards.

    Use before plain Kafka consumers take over a group whose connectors committed only to ZooKeeper
    (--from zookeeper --to kafka; the Kafka group must be empty), or before rolling back
    (--from kafka --to zookeeper).

    \b
    Example:
      migrator offsets sync -z 127.0.0.1:2181 -g orders -b 127.0.0.1:9092 --from zookeeper --to kafka
      migrator offsets sync -z 127.0.0.1:2181 -g orders -b 127.0.0.1:9092 --from zookeeper --to kafka --execute
    """
    if source == target:
        raise UsageError("--from and --to must differ")
    execute = execute_or_dry_run(execute, dry_run)
    with open_zookeeper(conn) as zk:
        view, layout = ops.read_checked(zk, group, {source, target}, "offsets sync")
        admin = _admin(find_brokers(conn, zk, view), "offsets sync")
        ops.check_topics(_partitions(zk, admin, set(topics)))
        src = ops.store_offsets(source, view, admin, topics)
        dst = ops.store_offsets(target, view, admin, topics)
        plan = ops.sync_plan(src, dst)
        if plan and target is OffsetStore.KAFKA:
            ops.require_empty_kafka_group(admin, group)
        _show_plan(plan, target, execute, as_json)
        if plan and execute:
            _write(zk, admin, group, target, plan)
    if as_json:
        echo_json(plan_doc(group, target, plan, execute, layout.word))
    elif not plan:
        click.echo(f"{group}: {target} already holds max({source}, {target}) on every partition; nothing to write")
    elif execute:
        click.echo(f"{group}: {len(plan)} offsets written to {target}")
    else:
        click.echo(f"dry run: {len(plan)} partitions would change; add --execute to write them")
    return EXIT_OK


def _reset_spec(
    to_earliest: bool, to_latest: bool, to_datetime: str | None, to_offset: int | None, shift_by: int | None
) -> reset.ResetSpec:
    given = [
        (to_earliest, reset.ResetSpec(reset.ResetKind.EARLIEST)),
        (to_latest, reset.ResetSpec(reset.ResetKind.LATEST)),
        (to_datetime is not None, reset.ResetSpec(reset.ResetKind.DATETIME, 0)),
        (to_offset is not None, reset.ResetSpec(reset.ResetKind.OFFSET, to_offset or 0)),
        (shift_by is not None, reset.ResetSpec(reset.ResetKind.SHIFT_BY, shift_by or 0)),
    ]
    chosen = [spec for on, spec in given if on]
    if len(chosen) != 1:
        raise UsageError("give exactly one of --to-earliest, --to-latest, --to-datetime, --to-offset, --shift-by")
    if chosen[0].kind is reset.ResetKind.DATETIME:
        return reset.ResetSpec(reset.ResetKind.DATETIME, reset.parse_datetime(to_datetime or ""))
    return chosen[0]


def _reset_partitions(
    admin: KafkaAdmin, stored: ops.Offsets, topics: tuple[str, ...], all_topics: bool
) -> list[TopicPartition]:
    """--topic T[:P,..] as given (checked against the brokers), or --all-topics: those the group has offsets for
    (`stored`)."""
    if all_topics == bool(topics):
        raise UsageError("give --topic (repeatable) or --all-topics")
    if all_topics:
        return sorted(stored)
    chosen: list[TopicPartition] = []
    for value in topics:
        topic, parts = reset.parse_topic_partitions(value)
        existing = admin.partitions(validate_topic(topic))
        if existing is None:
            raise UsageError(f"topic {topic} does not exist in Kafka")
        missing = sorted(set(parts) - set(existing))
        if missing:
            raise UsageError(f"topic {topic} has no partition {missing[0]} (it has {len(existing)})")
        chosen += [TopicPartition(topic, p) for p in parts or existing]
    return sorted(set(chosen))


def _refuse_live_members(zk: ZkSession, admin: KafkaAdmin, group: str) -> None:
    """A live member would overwrite the reset with its next commit (and a bridge commits to both stores)."""
    members = [m.consumer_id for m in read_group(zk, group).members]
    if members:
        raise RefusedError(
            f"group {group} has {len(members)} live member(s) in ZooKeeper ({', '.join(sorted(members)[:5])}); "
            "stop them and retry"
        )
    ops.require_empty_kafka_group(admin, group)


@offsets_group.command("reset")
@connection_options()
@group_option
@click.option(
    "--store",
    type=store_choice,
    default=OffsetStore.ZOOKEEPER.value,
    show_default=True,
    help="Which store to reset.",
)
@click.option("--topic", "-t", "topics", multiple=True, metavar="TOPIC[:P,..]", help="Reset these (repeatable).")
@click.option("--all-topics", is_flag=True, help="Reset every topic the group has committed offsets for.")
@click.option("--to-earliest", is_flag=True, help="To the oldest record still kept.")
@click.option("--to-latest", is_flag=True, help="To the log end (skip everything).")
@click.option("--to-datetime", metavar="ISO8601", help="To the first record at or after this time (UTC if no zone).")
@click.option("--to-offset", type=click.IntRange(min=0), metavar="N", help="To offset N (clamped to the log).")
@click.option("--shift-by", type=int, metavar="N", help="By N from the committed offset (negative: back).")
@execute_option
@dry_run_option
@json_option
def reset_cmd(
    conn: Connection, group: str, store: OffsetStore, topics: tuple[str, ...], all_topics: bool, to_earliest: bool,
    to_latest: bool, to_datetime: str | None, to_offset: int | None, shift_by: int | None, execute: bool,
    dry_run: bool, as_json: bool,
) -> int:  # fmt: skip
    """Reset a stopped group's committed offsets, as kafka-consumer-groups --reset-offsets does.

    New offsets are clamped to [log start, log end]. Refused (exit 2, nothing written) while the group has
    live members: ZooKeeper-registered consumers or bridges, or members of the Kafka group. A dry run
    (the default) runs every check and shows the plan; --execute writes it.

    \b
    Example:
      migrator offsets reset -z 127.0.0.1:2181 -g orders --topic orders --to-datetime 2026-11-25T10:00:00Z
      migrator offsets reset -z 127.0.0.1:2181 -g orders --topic orders:0,2 --shift-by -100 --execute
    """
    execute = execute_or_dry_run(execute, dry_run)
    spec = _reset_spec(to_earliest, to_latest, to_datetime, to_offset, shift_by)
    with open_zookeeper(conn) as zk:
        view, layout = ops.read_checked(zk, group, {store}, f"offsets reset --store {store}")
        admin = _admin(find_brokers(conn, zk, view), "offsets reset")
        stored = ops.store_offsets(store, view, admin)
        partitions = _reset_partitions(admin, stored, topics, all_topics)
        current = {tp: o for tp, o in stored.items() if tp in set(partitions)}
        at = admin.offsets_for_time(partitions, spec.value) if spec.kind is reset.ResetKind.DATETIME else {}
        bounds = reset.Bounds(admin.earliest_offsets(partitions), admin.log_end_offsets(partitions), at)
        rows = reset.reset_plan(spec, partitions, current, bounds)
        _refuse_live_members(zk, admin, group)
        plan = {r.partition: r.new for r in rows}
        if execute and plan:
            _write(zk, admin, group, store, plan)
    _show_reset(group, store, rows, execute, as_json, layout.word)
    return EXIT_OK


def reset_doc(
    group: str, store: OffsetStore, rows: list[reset.ResetRow], execute: bool, dialect: str | None = None
) -> dict[str, Any]:
    """`offsets reset --json`: the plan, each partition also with its `current` offset."""
    doc = plan_doc(group, store, {r.partition: r.new for r in rows}, execute, dialect)
    for row, entry in zip(rows, doc["offsets"], strict=True):
        entry["current"] = row.current
    return doc


def _show_reset(
    group: str, store: OffsetStore, rows: list[reset.ResetRow], execute: bool, as_json: bool, dialect: str | None
) -> None:
    if as_json:
        echo_json(reset_doc(group, store, rows, execute, dialect))
        return
    header = ("partition", "current", "new")
    click.echo("\n".join(align([header, *[(r.partition, r.current, r.new) for r in rows]], right=(1, 2))))
    if execute:
        click.echo(f"{group}: {len(rows)} offsets written to {store}")
    else:
        click.echo(f"dry run: {len(rows)} partitions; add --execute to write them")


commands: list[click.Command] = [offsets_group]
