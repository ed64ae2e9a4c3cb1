"""`migrator offsets export|import|diff|sync`."""

from __future__ import annotations

from pathlib import Path

import click
from kazoo.client import KazooClient

from migrator.cli.common import (
    Brokers,
    Connection,
    connection_options,
    echo_json,
    find_brokers,
    group_option,
    json_option,
    require_group,
)
from migrator.cli.common import zookeeper as open_zookeeper
from migrator.errors import EXIT_OK, MigratorError, UsageError
from migrator.kafka.admin import KafkaAdmin
from migrator.names import validate_topic
from migrator.ops import offsets as ops
from migrator.table import align
from migrator.zk.brokers import topic_partitions

store_choice = click.Choice(ops.STORES)


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


def _partitions(zk: KazooClient, admin: KafkaAdmin | None, topics: set[str]) -> dict[str, tuple[int, ...] | None]:
    """Each topic's partitions from the brokers, else from /brokers/topics (a ZooKeeper-mode cluster)."""
    return {t: admin.partitions(t) if admin is not None else topic_partitions(zk, t) for t in sorted(topics)}


def _check_output(output: str | None) -> None:
    """Before connecting: an export whose file cannot be written would read everything for nothing."""
    if output is None:
        return
    parent = Path(output).parent
    if not parent.is_dir():
        raise UsageError(f"--output {output}: directory {parent} does not exist; nothing was written")


def _show_plan(plan: dict, target: str, execute: bool) -> None:
    verb = "writing" if execute else "would write"
    for tp, off in sorted(plan.items()):
        click.echo(f"{verb} {target} {tp.topic} {tp.partition} {off}")


@click.group("offsets")
def offsets_group() -> None:
    """Export, import, compare and synchronise committed offsets between ZooKeeper and Kafka."""


@offsets_group.command("export")
@connection_options()
@group_option
@click.option("--store", type=store_choice, required=True, help="Which store to read.")
@click.option("--format", "fmt", type=click.Choice(ops.FORMATS), default="json", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="File (default: stdout).")
@topic_option
def export_cmd(conn: Connection, group: str, store: str, fmt: str, output: str | None, topics: tuple[str, ...]) -> int:
    """Write a group's committed next offsets (topic, partition, offset) as JSON or CSV.

    \b
    Example:
      migrator offsets export -z 127.0.0.1:2181 -g orders --store zookeeper --format csv -o orders.csv
      migrator offsets export -z 127.0.0.1:2181 -g orders --store kafka -b 127.0.0.1:9092
    """
    _check_output(output)
    with open_zookeeper(conn) as zk:
        require_group(zk, group)
        brokers = find_brokers(conn, zk, group)
        admin = _admin(brokers, "--store kafka") if store == "kafka" else brokers.admin
        ops.check_topics(_partitions(zk, admin, set(topics)))
        _view, offsets = ops.read_store(store, zk, group, admin, topics)
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
@click.option("--execute", is_flag=True, help="Write. Without it, only show what would be written.")
def import_cmd(conn: Connection, group: str, store: str, input_path: str, execute: bool) -> int:
    """Write offsets from an export file. The whole file is validated first, including that every topic
    and partition exists (from the brokers, else from /brokers/topics): a bad line exits 2 and nothing is
    written. Kafka needs an empty Kafka group (the broker refuses commits otherwise). The group may be new.

    \b
    Example:
      migrator offsets import -z 127.0.0.1:2181 -g orders --store kafka -b 127.0.0.1:9092 \\
          -i orders.csv --execute
    """
    try:
        with open(input_path, encoding="utf-8") as f:
            offsets = ops.parse(f.read())
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--input {input_path}: cannot be read: {exc}") from exc
    with open_zookeeper(conn) as zk:
        brokers = find_brokers(conn, zk, group)
        admin = _admin(brokers, "--store kafka") if store == "kafka" else brokers.admin
        ops.check_partitions(offsets, _partitions(zk, admin, {tp.topic for tp in offsets}))
        if store == "kafka":
            assert admin is not None
            ops.require_empty_kafka_group(admin, group)
        _show_plan(offsets, store, execute)
        if execute:
            if store == "kafka":
                assert admin is not None
                ops.write_kafka(admin, group, offsets)
            else:
                ops.write_zookeeper(zk, group, offsets)
            click.echo(f"{group}: {len(offsets)} offsets written to {store}")
        else:
            click.echo(f"dry run: {len(offsets)} offsets; add --execute to write them")
    return EXIT_OK


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
        require_group(zk, group)
        admin = _admin(find_brokers(conn, zk, group), "offsets diff")
        ops.check_topics(_partitions(zk, admin, set(topics)))
        _view, zk_offsets = ops.read_store("zookeeper", zk, group, admin, topics)
        _view, kafka_offsets = ops.read_store("kafka", zk, group, admin, topics)
    rows = ops.diff(zk_offsets, kafka_offsets)
    if as_json:
        echo_json(
            [
                {"topic": r.partition.topic, "partition": r.partition.partition, "zookeeper": r.zookeeper,
                 "kafka": r.kafka, "delta": r.delta, "state": r.state}
                for r in rows
            ]
        )  # fmt: skip
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
@click.option("--execute", is_flag=True, help="Write. Without it (the default, --dry-run) nothing is written.")
@click.option("--dry-run", is_flag=True, help="Only show what would be written (the default).")
@topic_option
def sync_cmd(
    conn: Connection, group: str, source: str, target: str, execute: bool, dry_run: bool, topics: tuple[str, ...]
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
    if execute and dry_run:
        raise UsageError("--execute and --dry-run contradict each other")
    with open_zookeeper(conn) as zk:
        require_group(zk, group)
        admin = _admin(find_brokers(conn, zk, group), "offsets sync")
        ops.check_topics(_partitions(zk, admin, set(topics)))
        _view, src = ops.read_store(source, zk, group, admin, topics)
        _view, dst = ops.read_store(target, zk, group, admin, topics)
        plan = ops.sync_plan(src, dst)
        if not plan:
            click.echo(f"{group}: {target} already holds max({source}, {target}) on every partition; nothing to write")
            return EXIT_OK
        if target == "kafka":
            ops.require_empty_kafka_group(admin, group)
        _show_plan(plan, target, execute)
        if not execute:
            click.echo(f"dry run: {len(plan)} partitions would change; add --execute to write them")
            return EXIT_OK
        if target == "kafka":
            ops.write_kafka(admin, group, plan)
        else:
            ops.write_zookeeper(zk, group, plan)
    click.echo(f"{group}: {len(plan)} offsets written to {target}")
    return EXIT_OK


commands: list[click.Command] = [offsets_group]
