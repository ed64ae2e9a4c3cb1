"""`migrator status`: members by kind, mode, authorities, ownership and offsets of one group."""

from __future__ import annotations

import click

from migrator.cli.common import (
    Connection,
    connection_options,
    echo_json,
    find_brokers,
    group_option,
    json_option,
)
from migrator.cli.common import zookeeper as open_zookeeper
from migrator.errors import EXIT_FAILED, EXIT_OK
from migrator.ops.groups import require_exists
from migrator.ops.status import error_line, read_status, read_zookeeper, render_text


@click.command("status")
@connection_options()
@group_option
@json_option
def status_cmd(conn: Connection, group: str, as_json: bool) -> int:
    """Show a group mid-migration: legacy connectors, bridges (published authority, generation, age),
    plain Kafka consumers, the mode, whether owners agree with the authority's assignment, and per
    partition its owner thread, ZooKeeper and Kafka offsets, log end and lag, then findings in words.

    The first line gives the verdict: OK, WARN (findings worth a look) or ERR (records may be processed
    twice or not at all, or Kafka could not be read). Exit 0 for OK and WARN, 1 for ERR, 3 when the group
    does not exist. Without --bootstrap-servers the brokers registered under /brokers/ids are used; when
    there are none, only the ZooKeeper half is shown (a WARN). Read-only.

    \b
    Example:
      migrator status -z 127.0.0.1:2181 -g orders -b 127.0.0.1:9092
      migrator status -z 127.0.0.1:2181 -g orders -b 127.0.0.1:9092 --json | jq .verdict
    """
    with open_zookeeper(conn) as zk:
        view, layout = read_zookeeper(zk, group)
        require_exists(zk, view)
        brokers = find_brokers(conn, zk, view)
        report = read_status(view, layout, brokers.admin, brokers.missing)
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(render_text(report))
    failed = error_line(report)
    if failed is None:
        return EXIT_OK
    click.echo(f"error: {failed}", err=True)
    return EXIT_FAILED


commands: list[click.Command] = [status_cmd]
