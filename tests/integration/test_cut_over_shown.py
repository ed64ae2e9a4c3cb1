"""After a real `migrator cutover`, `status` and `groups` (the CLI as an operator runs it) show the group as cut
over and fenced, waiting for its Kafka consumers until one commits, with the next command on the verdict line;
status still reads the group, fence included, in one pipelined pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from migrator.errors import EXIT_OK
from migrator.kafka.admin import KafkaAdmin
from migrator.protocol.partition import TopicPartition
from migrator.zk.paths import GroupPaths
from tests.helpers.cli import run
from tests.helpers.kafka import make_topic
from tests.helpers.round_trips import counting_env, read_counts

pytestmark = pytest.mark.integration

PARTITIONS = 2
CARRIED = 7
ADMIN = "digest:ops:s3cret"
ONE_PASS = 3


def stopped_scala_group(cluster: Any, zk: KazooClient, group: str, topic: str) -> None:
    """A Scala group whose members have all stopped: its offsets in ZooKeeper only, an empty `ids` folder."""
    make_topic(cluster, topic, partitions=PARTITIONS)
    paths = GroupPaths(group)
    for p in range(PARTITIONS):
        zk.create(paths.offset(topic, p), str(CARRIED).encode(), makepath=True)
    zk.ensure_path(paths.ids)


def status(cluster: Any, group: str, *extra: str, env: dict[str, str] | None = None) -> Any:
    return run("status", "-z", cluster.zookeeper, "-g", group, "-b", cluster.bootstrap_servers, *extra, env=env)


def groups_row(cluster: Any, group: str) -> dict[str, Any]:
    done = run("groups", "-z", cluster.zookeeper, "-b", cluster.bootstrap_servers, "--json")
    assert done.code == EXIT_OK, done
    return next(row for row in json.loads(done.stdout) if row["group"] == group)


def test_a_cut_over_group_shows_fenced_and_waiting_until_its_kafka_consumers_commit(
    cluster: Any, zk_client: KazooClient, unique_group: str, unique_topic: str, tmp_path: Path
) -> None:
    stopped_scala_group(cluster, zk_client, unique_group, unique_topic)
    before = json.loads(status(cluster, unique_group, "--json").stdout)
    assert before["fenced"] is False and before["cutover"] is None, before
    assert groups_row(cluster, unique_group)["state"] == "inactive"

    cut = run("cutover", "-g", unique_group, "-z", cluster.zookeeper, "-b", cluster.bootstrap_servers,
              "--zk-auth", ADMIN)  # fmt: skip
    assert cut.code == EXIT_OK, cut

    waiting = status(cluster, unique_group, "--json", env=counting_env(tmp_path))
    report = json.loads(waiting.stdout)
    assert waiting.code == EXIT_OK and report["verdict"] == "WARN", waiting
    assert report["mode"] == "kafka" and report["fenced"] is True, report
    assert report["cutover"] == "waiting-for-kafka-consumers", report
    assert f"group.id {unique_group}" in report["next"], report
    assert [f["kind"] for f in report["findings"]] == ["kafka-consumers-missing"], report["findings"]
    assert read_counts(tmp_path)["round_trips"] == ONE_PASS  # the fence rides in the same pass
    first_line = status(cluster, unique_group).stdout.splitlines()[0]
    assert "fenced, cutover waiting-for-kafka-consumers" in first_line, first_line
    assert f"next: start its Kafka consumers with group.id {unique_group}" in first_line, first_line
    row = groups_row(cluster, unique_group)
    assert (row["state"], row["cutover"]) == ("cut-over", "waiting-for-kafka-consumers"), row

    with KafkaAdmin(cluster.bootstrap_servers) as admin:  # its Kafka consumer commits past the carried offset
        admin.alter_offsets(unique_group, {TopicPartition(unique_topic, 0): CARRIED + 3})

    started = json.loads(status(cluster, unique_group, "--json").stdout)
    assert started["cutover"] == "kafka-consumers-started" and started["verdict"] == "OK", started
    row = groups_row(cluster, unique_group)
    assert (row["state"], row["cutover"]) == ("cut-over", "kafka-consumers-started"), row
