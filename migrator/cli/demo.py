"""`migrator demo`: watch KIP-125's plan run on a live group, with a verdict at the end."""

from __future__ import annotations

from pathlib import Path

import click

from migrator.errors import EXIT_FAILED, EXIT_OK, UsageError
from migrator.protocol.dialect import Dialect
from migrator.zk.client import connect_problem


@click.command("demo")
@click.option("--quick", is_flag=True, help="Fewer members and shorter waits (under a minute).")
@click.option("--zookeeper", "-z", metavar="HOST:PORT", help="Use this ZooKeeper (with --bootstrap-servers).")
@click.option(
    "--bootstrap-server",
    "--bootstrap-servers",
    "-b",
    "bootstrap_servers",
    metavar="HOST:PORT",
    help="Use these brokers (with --zookeeper).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo-output"),
    show_default=True,
    help="Where report.json and timeline.png go.",
)
@click.option(
    "--dialect",
    type=click.Choice([d.value for d in Dialect]),
    default=Dialect.SCALA.value,
    show_default=True,
    help="The group's legacy layout: Scala connectors, or pykafka BalancedConsumers (docs/pykafka.md).",
)
@click.pass_context
def demo_cmd(
    ctx: click.Context, quick: bool, zookeeper: str | None, bootstrap_servers: str | None, output: Path, dialect: str
) -> int:
    """Migrate a live consumer group from ZooKeeper to Kafka coordination and back, and judge it.

    Starts a local ZooKeeper + Kafka unless --zookeeper and --bootstrap-servers are given, produces
    sequenced records, and walks KIP-125's plan: legacy connectors -> bridges, set-mode kafka, bridges ->
    plain Kafka consumers, then the rollback. With --dialect pykafka the group starts as pykafka
    BalancedConsumers (connectors in pykafka's layout; pykafka itself is not needed). Ends with a verdict
    (lost, duplicated, dual processing) and each step's pause; exits 1 if any safety property failed.

    \b
    Example:
      migrator demo --quick
      migrator demo --quick --dialect pykafka
      migrator demo -z 127.0.0.1:2181 -b 127.0.0.1:9092 --output /tmp/demo
    """
    given = [v for v in (zookeeper, bootstrap_servers) if v is not None]
    if len(given) == 1 or any(not v.strip() for v in given):  # `-z ''` is a mistake, not "start a cluster"
        raise UsageError("give both --zookeeper and --bootstrap-servers, or neither (to start a local cluster)")
    if zookeeper is not None and (problem := connect_problem(zookeeper)) is not None:
        raise UsageError(f"--zookeeper: {problem}")
    from migrator.demo import run_demo

    debug = bool(ctx.find_root().params.get("debug"))
    result = run_demo(
        zookeeper, bootstrap_servers, output, quick=quick, echo=click.echo, debug=debug, dialect=Dialect(dialect)
    )
    return EXIT_OK if result.ok else EXIT_FAILED


commands: list[click.Command] = [demo_cmd]
