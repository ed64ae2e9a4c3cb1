"""`migrator console-consumer` runs until it is stopped, like `kafka-console-consumer`:
idle streams, an empty topic or a peer leaving never end it; `--max-messages` and `consumer.timeout.ms` do."""

from __future__ import annotations

import signal
import time

import pytest

from migrator.zk.group_reader import read_group
from tests.apps.run import App, apps_fixture, start  # noqa: F401 - the `apps` fixture
from tests.helpers.kafka import make_topic, produce
from tests.helpers.wait import wait_until

pytestmark = pytest.mark.integration


def console(apps: list[App], cluster, group: str, *args: str) -> App:
    return start(apps, "-m", "migrator", "console-consumer", "-z", cluster.zookeeper, "-g", group,
                 "--consumer-property", "zookeeper.session.timeout.ms=4000", *args, ready=False)  # fmt: skip


def owned_by(zk_client, group: str, topic: str) -> set[str]:
    return set(read_group(zk_client, group).owners_of(topic).values())


def test_an_empty_topic_keeps_it_running_until_a_signal(cluster, zk_client, unique_group, unique_topic, apps):
    topic = make_topic(cluster, unique_topic, partitions=2)
    app = console(apps, cluster, unique_group, "-t", topic, "--from-beginning")
    wait_until(lambda: len(owned_by(zk_client, unique_group, topic)) == 1, 30, what="the console owns its partitions")
    time.sleep(3.0)
    assert app.proc.poll() is None, f"exited on its own: {app.stderr}"
    produce(cluster, topic, ["late"])
    wait_until(lambda: app.lines == ["late"], 30, what="the late record printed")
    app.signal(signal.SIGTERM)
    assert app.wait(30) == 0, app.stderr


def test_a_peer_interrupted_leaves_the_other_running_with_every_partition(
    cluster, zk_client, unique_group, unique_topic, apps
):
    topic = make_topic(cluster, unique_topic, partitions=4)
    first = console(apps, cluster, unique_group, "-t", topic, "--consumer-property", "rebalance.backoff.ms=300")
    second = console(apps, cluster, unique_group, "-t", topic, "--consumer-property", "rebalance.backoff.ms=300")
    wait_until(lambda: len(owned_by(zk_client, unique_group, topic)) == 2, 30, what="both own partitions")
    second.signal(signal.SIGINT)
    assert second.wait(30) == 0, second.stderr
    wait_until(lambda: len(read_group(zk_client, unique_group).owners_of(topic)) == 4
               and len(owned_by(zk_client, unique_group, topic)) == 1, 30, what="the first owns all 4")  # fmt: skip
    time.sleep(2.0)
    assert first.proc.poll() is None, f"exited on its own: {first.stderr}"
    produce(cluster, topic, [f"v{i}" for i in range(8)])
    wait_until(lambda: len(first.lines) == 8, 30, what="the remaining member prints every record")
    first.signal(signal.SIGTERM)
    assert first.wait(30) == 0, first.stderr


def test_consumer_timeout_ms_still_ends_an_idle_run(cluster, unique_group, unique_topic, apps):
    topic = make_topic(cluster, unique_topic, partitions=1)
    app = console(apps, cluster, unique_group, "-t", topic, "--consumer-property", "consumer.timeout.ms=1500")
    assert app.wait(60) == 0, app.stderr


def test_a_legacy_properties_file_runs_as_a_bridge_unchanged(
    cluster, zk_client, unique_group, unique_topic, apps, tmp_path
):
    """Point 12: KIP-125's first step sets offsets.storage=zookeeper and dual.commit.enabled=false; with
    migration enabled the same file is accepted, and the bridge says what it does instead."""
    topic = make_topic(cluster, unique_topic, partitions=1)
    produce(cluster, topic, [f"v{i}" for i in range(3)])
    path = tmp_path / "consumer.properties"
    path.write_text(
        f"zookeeper.connect={cluster.zookeeper}\ngroup.id={unique_group}\nauto.offset.reset=smallest\n"
        "offsets.storage=zookeeper\ndual.commit.enabled=false\ncoordination.migration.enabled=true\n"
        f"coordination.migration.bootstrap.servers={cluster.bootstrap_servers}\n"
    )
    app = console(apps, cluster, unique_group, "-t", topic, "--consumer.config", str(path), "--max-messages", "3")
    assert app.wait(90) == 0, app.stderr
    assert app.lines == ["v0", "v1", "v2"]
    assert "offsets.storage=zookeeper and dual.commit.enabled=false ignored: a bridge" in app.stderr
    assert zk_client.get(f"/consumers/{unique_group}/offsets/{topic}/0")[0] == b"3"  # dual commit
