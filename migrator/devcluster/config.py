"""Configuration files and JVM command lines of the dev-cluster processes.

Pure functions so that unit tests can check the settings the other parts of the project rely on
(short ZooKeeper ticks for fast session expiry, fast group joins, no auto-created topics).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from migrator.devcluster.ports import HOST

ZK_TICK_MS = 500  # minSessionTimeout = 2 ticks = 1 s, maxSessionTimeout = 20 ticks = 10 s
BROKER_ZK_SESSION_MS = 6000  # a killed broker's /brokers/ids node vanishes within ~6 s
ZK_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
ZK_QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"  # ZK_MAIN ignores `server.N` lines
KAFKA_MAIN = "kafka.Kafka"
ZK_HEAP = "-Xmx256m"
BROKER_HEAP = "-Xmx512m"
FAST_START = ("-XX:TieredStopAtLevel=1", "-Xshare:auto")
"""C1 only, and the JDK's shared class archive: a dev-cluster JVM (re)starts in about half the time on a busy
2-core host, where C2 compiling the broker's startup code competes with everything else; the brokers' light
test and demo loads never need C2's peak throughput."""


@dataclass(frozen=True, slots=True)
class QuorumPeer:
    """One server of a ZooKeeper ensemble: its `myid` and the ports the servers talk to each other on."""

    server_id: int
    peer_port: int
    election_port: int

    def line(self) -> str:
        return f"server.{self.server_id}={HOST}:{self.peer_port}:{self.election_port}"


def zoo_cfg(port: int, data_dir: Path, ensemble: Sequence[QuorumPeer] = ()) -> str:
    """A standalone server's config, or with `ensemble` one member's (its `myid` file is written apart)."""
    lines: dict[str, object] = {
        "tickTime": ZK_TICK_MS,
        "initLimit": 10,
        "syncLimit": 5,
        "dataDir": data_dir,
        "clientPort": port,
        "clientPortAddress": HOST,
        "maxClientCnxns": 0,
        "admin.enableServer": "false",
        "4lw.commands.whitelist": "mntr,ruok,srvr,cons,dump",
        "autopurge.purgeInterval": 0,
    }
    for peer in ensemble:
        key, _, value = peer.line().partition("=")
        lines[key] = value
    return "".join(f"{k}={v}\n" for k, v in lines.items())


def server_properties(
    broker_id: int,
    port: int,
    zookeeper: str,
    log_dir: Path,
    group_max_size: int | None = None,
    extra: Mapping[str, object] | None = None,
    advertised_port: int | None = None,
) -> str:
    """`advertised_port` puts something else (e.g. a `SilentProxy`) between every client and the broker."""
    props: dict[str, object] = {
        "broker.id": broker_id,
        "listeners": f"PLAINTEXT://{HOST}:{port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{advertised_port or port}",
        "zookeeper.connect": zookeeper,
        "zookeeper.session.timeout.ms": BROKER_ZK_SESSION_MS,
        "log.dirs": log_dir,
        "offsets.topic.replication.factor": 1,
        "offsets.topic.num.partitions": 4,
        "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1,
        "transaction.state.log.num.partitions": 4,
        "group.initial.rebalance.delay.ms": 0,
        "group.min.session.timeout.ms": 1000,
        "auto.create.topics.enable": "false",
        "num.partitions": 1,
        "default.replication.factor": 1,
        "num.network.threads": 2,
        "num.io.threads": 4,
        "log.segment.bytes": 16 * 1024 * 1024,
        "controlled.shutdown.max.retries": 1,
        "controlled.shutdown.retry.backoff.ms": 500,
    }
    if group_max_size is not None:
        props["group.max.size"] = group_max_size
    props.update(dict(extra or {}))
    return "".join(f"{k}={v}\n" for k, v in props.items())


def jvm_command(
    java: str,
    libs: Path,
    log4j: Path,
    log_file: Path,
    heap: str,
    main: str,
    config: Path,
    options: Sequence[str] = (),
) -> list[str]:
    """The java command line; `config` lives in the cluster dir, which is how `down` recognises its pids.
    `options` are further JVM options (e.g. the class archive's)."""
    return [
        java,
        heap,
        *FAST_START,
        *options,
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        f"-Dlog4j.configuration=file:{log4j}",
        f"-Dmigrator.log.file={log_file}",
        "-Dzookeeper.jmx.log4j.disable=true",
        "-cp",
        f"{libs}/*",
        main,
        str(config),
    ]
