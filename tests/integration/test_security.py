"""Bridges and operator commands over TLS and SASL, on the session cluster's secured listeners, driven as an
operator does: `console-consumer --consumer.config FILE` and `set-mode --kafka-property ...` as subprocesses.

See docs/security.md: security is configured once, as `kafka.<p>`, which reaches every Kafka client.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from migrator.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED
from tests.helpers import cli
from tests.helpers.bridge import owners
from tests.helpers.kafka import make_topic, produce
from tests.helpers.wait import wait_until
from tests.helpers.zk import zk_client

ROOT = Path(__file__).resolve().parents[2]
RECORDS = 40
PARTITIONS = 4


def _secured(cluster: Any) -> Any:
    secured = getattr(cluster, "secured", None)
    if secured is None:
        pytest.skip("the cluster has no secured listeners (an external cluster)")
    return secured


def _bridge_file(cluster: Any, group: str, protocol: str, path: Path) -> Path:
    """A bridge's properties as docs/security.md shows them: every client property once, as `kafka.<p>`."""
    secured = _secured(cluster)
    props = {
        "zookeeper.connect": cluster.zookeeper,
        "group.id": group,
        "coordination.migration.enabled": "true",
        "kafka.bootstrap.servers": secured.bootstrap[protocol],
        "auto.offset.reset": "smallest",
        "rebalance.backoff.ms": "300",
        "zookeeper.session.timeout.ms": "4000",
        **{f"kafka.{k}": v for k, v in secured.client_properties(protocol).items()},
    }
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


class Consumer(cli.Background):
    """`migrator console-consumer` in the background; its stdout lines collected as they arrive."""

    def __init__(self, cluster: Any, group: str, topic: str, config: Path) -> None:
        super().__init__(
            "console-consumer", "-z", cluster.zookeeper, "-g", group, "-t", topic, "--consumer.config", str(config)
        )

    def stop(self) -> tuple[int, str]:
        return self.terminate(signal.SIGTERM)


@pytest.fixture
def consumers() -> Iterator[list[Consumer]]:
    started: list[Consumer] = []
    yield started
    for c in started:
        c.kill()


def _set_mode(cluster: Any, group: str, target: str, protocol: str) -> cli.CliRun:
    """set-mode without -b: the brokers come from /brokers/ids, at the endpoint of `protocol`."""
    props = [
        a for k, v in _secured(cluster).client_properties(protocol).items() for a in ("--kafka-property", f"{k}={v}")
    ]
    return cli.run("set-mode", target, "-z", cluster.zookeeper, "-g", group, "--wait", "--timeout", "60", *props)


def test_bridges_over_ssl_and_sasl_ssl_consume_and_switch_both_ways(
    cluster: Any, unique_group: str, unique_topic: str, tmp_path: Path, consumers: list[Consumer]
) -> None:
    """Two bridges of one group, one over SSL and one over SASL_SSL (SASL/PLAIN): every record is printed
    once under zookeeper authority, after a switch to kafka and after the switch back."""
    make_topic(cluster, unique_topic, partitions=PARTITIONS)
    for protocol in ("SSL", "SASL_SSL"):
        config = _bridge_file(cluster, unique_group, protocol, tmp_path / f"{protocol}.properties")
        consumers.append(Consumer(cluster, unique_group, unique_topic, config))
    with zk_client(cluster) as zk:  # both bridges own partitions before anything is produced

        def both_own() -> bool:
            held = owners(zk, unique_group, unique_topic)
            return len(held) == PARTITIONS and len({thread.rsplit("-", 1)[0] for thread in held.values()}) == 2

        wait_until(both_own, 90, what="both bridges owning partitions")
    sent: list[str] = []

    def send_and_read(batch: str) -> None:
        # to every partition alike: keyless records produced within librdkafka's sticky-partitioning linger
        # (10 ms) would all go to one partition, and so to one bridge
        for partition in range(PARTITIONS):
            values = [f"{batch}-{partition}-{i}" for i in range(RECORDS // PARTITIONS)]
            produce(cluster, unique_topic, values, partition=partition)
            sent.extend(values)
        wait_until(lambda: sum(len(c.lines) for c in consumers) >= len(sent), 90, what=f"the {batch} records")

    send_and_read("zookeeper")
    assert all(c.lines for c in consumers), "each bridge owns partitions and fetches them"
    for target, protocol in (("kafka", "SASL_SSL"), ("zookeeper", "SSL")):
        done = _set_mode(cluster, unique_group, target, protocol)
        assert done.code == EXIT_OK, done.stderr
        assert "switch complete" in done.stdout
        send_and_read(target)
    for c in consumers:
        rc, err = c.stop()
        assert rc == EXIT_OK, err
    printed = [line for c in consumers for line in c.lines]
    assert sorted(printed) == sorted(sent)


def test_security_only_for_the_embedded_member_is_refused_at_start_up(
    cluster: Any, unique_group: str, unique_topic: str, tmp_path: Path
) -> None:
    """The runbook's old advice (`coordination.migration.security.protocol`) left the fetcher and admin on
    PLAINTEXT: now the bridge refuses to start, naming the properties, and joins nothing."""
    secured = _secured(cluster)
    config = tmp_path / "bad.properties"
    config.write_text(
        "coordination.migration.enabled=true\n"
        f"coordination.migration.bootstrap.servers={secured.bootstrap['SSL']}\n"
        "coordination.migration.security.protocol=SSL\n"
        f"coordination.migration.ssl.ca.location={secured.ca}\n"
    )
    done = cli.run(
        "console-consumer", "-z", cluster.zookeeper, "-g", unique_group, "-t", unique_topic, "--consumer.config",
        str(config),
    )  # fmt: skip
    line = done.single_error(EXIT_REFUSED)
    assert "coordination.migration.security.protocol reaches only the embedded member" in line
    assert "coordination.migration.ssl.ca.location" in line


def test_a_bridge_and_the_cli_over_zookeeper_tls(
    cluster: Any, unique_group: str, unique_topic: str, tmp_path: Path
) -> None:
    """ZooKeeper's TLS client port with Kafka's `zookeeper.ssl.*` names: a bridge (`--consumer.config`) consumes
    through it, `get-mode --command-config` reads through it, and a plaintext client gets no answer there."""
    tls = _secured(cluster).zookeeper_tls_properties()
    if not tls["zookeeper.connect"]:
        pytest.skip("the cluster has no ZooKeeper TLS port")
    make_topic(cluster, unique_topic, partitions=2)
    values = [f"tls-{i}" for i in range(10)]
    produce(cluster, unique_topic, values)
    bridge = {
        **tls,
        "group.id": unique_group,
        "coordination.migration.enabled": "true",
        "kafka.bootstrap.servers": cluster.bootstrap_servers,
        "auto.offset.reset": "smallest",
        "zookeeper.connection.timeout.ms": "60000",  # TLS handshakes are slow on a loaded machine
    }
    config = tmp_path / "bridge.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in bridge.items()))
    done = cli.run(
        "console-consumer", "-t", unique_topic, "--consumer.config", str(config), "--max-messages", "10", timeout=300
    )
    assert done.code == EXIT_OK, done.stderr
    assert sorted(done.stdout.split()) == sorted(values)
    admin = tmp_path / "admin.properties"
    admin.write_text("".join(f"{k}={v}\n" for k, v in tls.items()))
    mode = cli.run("get-mode", "-g", unique_group, "--command-config", str(admin), "--connect-timeout", "60")
    assert mode.code == EXIT_OK and mode.stdout.startswith(f"{unique_group}: absent"), mode
    plain = cli.run("get-mode", "-g", unique_group, "-z", tls["zookeeper.connect"], "--connect-timeout", "2")
    assert "did not answer" in plain.single_error(EXIT_FAILED)
