"""`migrator groups`: list consumer groups with a one-line state each."""

from __future__ import annotations

import click

from migrator.cli.common import Connection, connection_options, echo_json, json_option, make_admin
from migrator.cli.common import zookeeper as open_zookeeper
from migrator.errors import EXIT_OK
from migrator.ops.groups import GroupRow, group_row
from migrator.protocol.group_view import GroupView
from migrator.protocol.kafka import KafkaGroup
from migrator.protocol.layout_dialect import GroupLayout
from migrator.protocol.partition import TopicPartition
from migrator.table import align
from migrator.zk.group_reader import read_many_with_layout
from migrator.zk.paths import CONSUMERS
from migrator.zk.session import children


@click.command("groups")
@connection_options()
@json_option
def groups_cmd(conn: Connection, as_json: bool) -> int:
    """List the consumer groups under /consumers, and with --bootstrap-server the Kafka groups too, one
    line each: state (inactive, legacy, mixed, bridging, kafka, cut-over, fenced), mode, members by kind, Kafka
    group state, and for a fenced group where its cutover stands.

    Read-only; needs neither Spark nor Java (`fleet-scan` plans many groups at once). Without -b only
    ZooKeeper is read.

    \b
    Example:
      migrator groups -z 127.0.0.1:2181
      migrator groups -z 127.0.0.1:2181 -b 127.0.0.1:9092 --json
    """
    admin = make_admin(conn)
    with open_zookeeper(conn) as zk:
        names = sorted(children(zk, CONSUMERS) or ())
        read = read_many_with_layout(zk, names, fence=True)
    kafka: dict[str, KafkaGroup] = {}
    committed: dict[str, dict[TopicPartition, int]] = {}
    if admin is not None:
        names = sorted(set(names) | set(admin.list_groups()))
        kafka = {name: admin.describe_group(name) for name in names}
        committed = {name: admin.group_offsets(name) for name, (view, _) in read.items() if _fenced(view)}
    rows = [_row(read.get(name), name, kafka.get(name), committed.get(name)) for name in names]
    _show(rows, as_json)
    return EXIT_OK


def _fenced(view: GroupView) -> bool:
    """Worth Kafka's committed offsets: whether a fenced group's Kafka consumers committed says they started."""
    return view.fence is not None and view.fence.fenced


def _row(
    read: tuple[GroupView, GroupLayout] | None,
    name: str,
    kafka: KafkaGroup | None,
    committed: dict[TopicPartition, int] | None,
) -> GroupRow:
    """The row of a group read in ZooKeeper, or of one only Kafka knows (`read` None)."""
    if read is None:
        return group_row(GroupView(group=name, exists=False), kafka)
    view, layout = read
    return group_row(view, kafka, len(layout.owner_nodes), committed)


def _show(rows: list[GroupRow], as_json: bool) -> None:
    if as_json:
        echo_json([r.to_dict() for r in rows])
        return
    if not rows:
        click.echo("no consumer groups")
        return
    header = ("group", "state", "mode", "legacy", "bridges", "kafka_state", "kafka_members", "cutover")
    body = [
        (r.group, r.state.value, r.mode, r.legacy, r.bridges, r.kafka_state, r.kafka_members, r.cutover or "-")
        for r in rows
    ]
    click.echo("\n".join(align([header, *body], right=(3, 4, 6))))


commands: list[click.Command] = [groups_cmd]
