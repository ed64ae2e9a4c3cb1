"""`migrator dev-cluster ...`: a local ZooKeeper + Kafka for trying the migrator and running its tests.

`up` and `env` print only `KEY=VALUE` lines on stdout so that `eval $(migrator dev-cluster env)` works;
everything for humans goes to stderr.
"""

from __future__ import annotations

import time

import click

from migrator.cli.common import KeyValue, as_dict
from migrator.devcluster import DevCluster, state
from migrator.devcluster.cluster import KAFKA_VERSIONS
from migrator.devcluster.jars import ensure_jars, ensure_old_consumer_jars
from migrator.devcluster.paths import DEFAULT_NAME, OLD_CONSUMER_VERSION
from migrator.devcluster.ports import HOST

BROKER_PROPERTY = KeyValue("offsets.topic.replication.factor=3")

_name_option = click.option(
    "--name", default=DEFAULT_NAME, show_default=True, help="Cluster name; several can run side by side."
)


def _print_env(zookeeper: str, bootstrap: str) -> None:
    click.echo(f"ZOOKEEPER={zookeeper}")
    click.echo(f"BOOTSTRAP_SERVERS={bootstrap}")


def _print_secured(cluster: DevCluster) -> None:
    """`<PROTOCOL>_BOOTSTRAP_SERVERS=...` on stdout; each protocol's client properties file on stderr."""
    secured = cluster.secured
    assert secured is not None
    for protocol, servers in secured.bootstrap.items():
        click.echo(f"{protocol}_BOOTSTRAP_SERVERS={servers}")
    for protocol in secured.bootstrap:
        path = cluster.cluster_dir / f"client-{protocol.lower()}.properties"
        shown = " ".join(f"{k}={v}" for k, v in secured.client_properties(protocol).items())
        click.echo(f"{protocol}: {path} ({shown}); as a bridge's properties, prefix each with kafka.", err=True)


@click.group("dev-cluster")
def dev_cluster() -> None:
    """Run a real ZooKeeper + Kafka 3.9 (ZooKeeper mode; or 2.8, 1.1) cluster on 127.0.0.1.

    \b
    Example:
      eval $(migrator dev-cluster up)
      migrator dev-cluster stop broker-1 && migrator dev-cluster start broker-1
      migrator dev-cluster down
    """


@dev_cluster.command()
@click.option("--brokers", default=1, show_default=True, type=click.IntRange(1, 9), help="Number of brokers.")
@click.option("--group-max-size", type=click.IntRange(min=1), default=None, help="Broker group.max.size.")
@click.option(
    "--backend",
    type=click.Choice(["local", "docker"]),
    default="local",
    show_default=True,
    help="local: JVMs from Maven Central jars; docker: containers via testcontainers (needs a daemon).",
)
@click.option(
    "--broker-config",
    "broker_config",
    multiple=True,
    type=BROKER_PROPERTY,
    callback=as_dict,
    help="A broker property (repeatable), after the dev defaults, e.g. offsets.topic.replication.factor=3.",
)
@click.option(
    "--zookeepers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 7),
    help="ZooKeeper servers: 1 standalone, or an ensemble (e.g. 3) named zookeeper-1, zookeeper-2, ...",
)
@click.option(
    "--kafka-version",
    type=click.Choice(KAFKA_VERSIONS),
    default=KAFKA_VERSIONS[0],
    show_default=True,
    help="Broker release; each runs with its own ZooKeeper (3.8.4, 3.5.9, 3.4.10).",
)
@click.option(
    "--security",
    is_flag=True,
    help="Also SSL, SASL_SSL and SASL_PLAINTEXT listeners (dev CA, SASL/PLAIN user); prints their client properties.",
)
@_name_option
def up(
    brokers: int,
    group_max_size: int | None,
    backend: str,
    broker_config: dict[str, str],
    zookeepers: int,
    kafka_version: str,
    security: bool,
    name: str,
) -> None:
    """Start a cluster and print ZOOKEEPER=... and BOOTSTRAP_SERVERS=... once it is ready."""
    started = time.monotonic()
    if backend == "docker":
        from migrator.devcluster import docker_backend

        if brokers != 1 or zookeepers != 1 or kafka_version != KAFKA_VERSIONS[0]:
            raise click.UsageError("--backend docker runs exactly one broker and one ZooKeeper of the default version")
        if broker_config or security:
            raise click.UsageError("--backend docker does not take --broker-config or --security")
        st = docker_backend.start(name, group_max_size)
        zookeeper = f"{HOST}:{st.zookeeper_port}"
        bootstrap = ",".join(f"{HOST}:{p.port}" for p in st.processes if p.broker_id is not None)
    else:
        cluster = DevCluster.start(brokers=brokers, group_max_size=group_max_size, name=name, detached=True,
                                   extra_broker_config=broker_config, zookeepers=zookeepers,
                                   kafka_version=kafka_version, secured=security)  # fmt: skip
        zookeeper, bootstrap = cluster.zookeeper, cluster.bootstrap_servers
        click.echo(f"logs: {cluster.cluster_dir}", err=True)
    _print_env(zookeeper, bootstrap)
    if security:
        _print_secured(cluster)
    click.echo(
        f"dev cluster {name!r} ready in {time.monotonic() - started:.1f}s; "
        f"stop it with `migrator dev-cluster down --name {name}`",
        err=True,
    )


@dev_cluster.command()
@_name_option
def down(name: str) -> None:
    """Stop the cluster's processes and delete its data (does nothing if it is not running)."""
    if state.load(name) is None:
        click.echo(f"no dev cluster named {name!r}", err=True)
        return
    with state.name_lock(name):
        st = state.load(name)
        if st is None:
            return  # someone else downed it meanwhile
        if st.backend == "docker":
            from migrator.devcluster import docker_backend

            docker_backend.down(st)
        else:
            DevCluster(st).down()
    click.echo(f"dev cluster {name!r} is down", err=True)


@dev_cluster.command()
def status() -> None:
    """List every dev cluster of this user and its processes (stale ones are cleaned up first)."""
    for cleaned in state.sweep_stale():
        click.echo(f"removed stale dev cluster {cleaned!r} (its processes were gone)", err=True)
    names = state.names()
    if not names:
        click.echo("no dev cluster is running")
        return
    for name in names:
        st = state.load(name)
        if st is None:
            continue
        click.echo(f"{name} ({st.backend}) {st.cluster_dir}")
        alive = set(st.alive_pids()) if st.backend == "local" else set()
        for proc in st.processes:
            running = "docker" if st.backend == "docker" else ("running" if proc.pid in alive else "stopped")
            pid = f"pid {proc.pid}" if proc.pid in alive else ""
            click.echo(f"  {proc.name:<10} {HOST}:{proc.port:<6} {running:<8} {pid}".rstrip())


@dev_cluster.command()
@_name_option
def env(name: str) -> None:
    """Print ZOOKEEPER=... and BOOTSTRAP_SERVERS=... of a running cluster."""
    cluster = DevCluster.attach(name)
    _print_env(cluster.zookeeper, cluster.bootstrap_servers)


@dev_cluster.command()
@click.argument("process_name", metavar="PROCESS")
@click.option("--kill", is_flag=True, help="SIGKILL instead of a clean shutdown.")
@_name_option
def stop(process_name: str, kill: bool, name: str) -> None:
    """Stop one process (zookeeper, broker-1, ...) to rehearse a failure."""
    cluster = DevCluster.attach(name)
    cluster.stop_process(process_name, kill=kill)
    click.echo(f"{process_name} stopped", err=True)


@dev_cluster.command()
@click.argument("process_name", metavar="PROCESS")
@_name_option
def start(process_name: str, name: str) -> None:
    """Start a stopped process again on its old port and data, and wait until it is ready."""
    cluster = DevCluster.attach(name)
    cluster.start_process(process_name)
    click.echo(f"{process_name} ready", err=True)


@dev_cluster.command()
def fetch() -> None:
    """Download the Kafka and ZooKeeper jars into the per-user cache (once; later calls are instant).

    Also the Kafka 1.1.1 jars of the Scala old consumer that the interop tests run (the 1.1.1 broker
    too) and the Kafka 2.8.2 broker of the compatibility tests, so that one fetch before the tests (what
    CI does) covers every jar they need. Prints one directory per line.
    """
    click.echo(str(ensure_jars()))
    click.echo(str(ensure_old_consumer_jars()))
    for version in KAFKA_VERSIONS[1:]:
        if version != OLD_CONSUMER_VERSION:
            click.echo(str(ensure_jars(version)))


commands: list[click.Command] = [dev_cluster]
