"""offsets export/import/diff/sync on the real cluster."""

from __future__ import annotations

import json
from typing import Any

from confluent_kafka import Consumer
from kazoo.client import KazooClient

from migrator.cli.main import main
from migrator.kafka.admin import KafkaAdmin
from migrator.protocol.partition import TopicPartition
from migrator.zk.paths import GroupPaths
from tests.helpers.kafka import make_topic, produce
from tests.helpers.wait import wait_until

LEGACY_STOPPED_AT = {0: 5, 1: 7, 2: 0}


def legacy_group(cluster: Any, zk: KazooClient, group: str, topic: str) -> None:
    """A group whose legacy members committed only to ZooKeeper, then stopped."""
    make_topic(cluster, topic, partitions=3)
    for p in range(3):
        produce(cluster, topic, [f"{p}-{i}" for i in range(10)], partition=p)
    for p, offset in LEGACY_STOPPED_AT.items():
        zk.create(GroupPaths(group).offset(topic, p), str(offset).encode(), makepath=True)


def first_offsets(cluster: Any, group: str, topic: str, timeout: float = 30) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                         "auto.offset.reset": "latest", "enable.auto.commit": False})  # fmt: skip
    first: dict[int, int] = {}

    def every_partition_read() -> bool:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            first.setdefault(msg.partition(), msg.offset())
        return len(first) == 3

    try:
        consumer.subscribe([topic])
        wait_until(every_partition_read, timeout, interval=0, what=f"a record of every partition of {topic}")
    finally:
        consumer.close()
    return first


def kafka_committed(cluster: Any, group: str, topic: str) -> dict[int, int]:
    admin = KafkaAdmin(cluster.bootstrap_servers)
    got = admin.committed_offsets(group, [TopicPartition(topic, p) for p in range(3)])
    return {tp.partition: o for tp, o in got.items()}


def cli(cluster: Any, *args: str) -> int:
    return main([*args, "-z", cluster.zookeeper, "-b", cluster.bootstrap_servers])


def test_sync_to_kafka_resumes_exactly_where_the_legacy_group_stopped(
    cluster, zk_client, unique_group, unique_topic, capsys
) -> None:
    legacy_group(cluster, zk_client, unique_group, unique_topic)

    assert cli(cluster, "offsets", "sync", "-g", unique_group, "--from", "zookeeper", "--to", "kafka") == 0
    assert "dry run: 3 partitions would change" in capsys.readouterr().out
    assert kafka_committed(cluster, unique_group, unique_topic) == {0: -1, 1: -1, 2: -1}

    assert cli(cluster, "offsets", "sync", "-g", unique_group, "--from", "zookeeper", "--to", "kafka", "--execute") == 0
    assert kafka_committed(cluster, unique_group, unique_topic) == LEGACY_STOPPED_AT
    assert first_offsets(cluster, unique_group, unique_topic) == LEGACY_STOPPED_AT


def test_sync_never_moves_backwards(cluster, zk_client, unique_group, unique_topic, capsys) -> None:
    legacy_group(cluster, zk_client, unique_group, unique_topic)
    KafkaAdmin(cluster.bootstrap_servers).alter_offsets(unique_group, {TopicPartition(unique_topic, 0): 9})
    assert cli(cluster, "offsets", "sync", "-g", unique_group, "--from", "zookeeper", "--to", "kafka", "--execute") == 0
    assert kafka_committed(cluster, unique_group, unique_topic) == {0: 9, 1: 7, 2: 0}
    assert cli(cluster, "offsets", "sync", "-g", unique_group, "--from", "kafka", "--to", "zookeeper", "--execute") == 0
    assert zk_client.get(GroupPaths(unique_group).offset(unique_topic, 0))[0] == b"9"

    capsys.readouterr()
    assert cli(cluster, "offsets", "diff", "-g", unique_group, "--json") == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["partition"], r["zookeeper"], r["kafka"], r["state"]) for r in rows] == [
        (0, 9, 9, "equal"), (1, 7, 7, "equal"), (2, 0, 0, "equal"),
    ]  # fmt: skip


def test_import_into_a_live_kafka_group_is_refused(cluster, zk_client, fake_group, tmp_path, capsys) -> None:
    fake_group.add_kafka_member("plain-consumer")
    fake_group.wait_kafka_members({"plain-consumer"})
    before = kafka_committed(cluster, fake_group.group, fake_group.topic)
    path = tmp_path / "o.csv"
    path.write_text(f"topic,partition,offset\n{fake_group.topic},0,3\n")
    code = cli(cluster, "offsets", "import", "-g", fake_group.group, "--store", "kafka", "-i", str(path), "--execute")
    assert code == 2
    assert "live member(s)" in capsys.readouterr().err
    assert kafka_committed(cluster, fake_group.group, fake_group.topic) == before


def test_bad_line_writes_nothing(cluster, zk_client, unique_group, unique_topic, tmp_path, capsys) -> None:
    legacy_group(cluster, zk_client, unique_group, unique_topic)
    path = tmp_path / "o.csv"
    path.write_text(f"topic,partition,offset\n{unique_topic},0,1\n{unique_topic},1,x\n")
    code = cli(cluster, "offsets", "import", "-g", unique_group, "--store", "zookeeper", "-i", str(path), "--execute")
    assert code == 2
    assert zk_client.get(GroupPaths(unique_group).offset(unique_topic, 0))[0] == b"5"
    path.write_text(f"topic,partition,offset\n{unique_topic},0,1\n{unique_topic},9,1\n")  # no partition 9
    code = cli(cluster, "offsets", "import", "-g", unique_group, "--store", "zookeeper", "-i", str(path), "--execute")
    assert code == 2
    assert "has no partition 9" in capsys.readouterr().err
    assert zk_client.get(GroupPaths(unique_group).offset(unique_topic, 0))[0] == b"5"


def test_export_then_import_round_trip(cluster, zk_client, unique_group, unique_topic, tmp_path, capsys) -> None:
    legacy_group(cluster, zk_client, unique_group, unique_topic)
    path = tmp_path / "o.csv"
    args = ("offsets", "export", "-g", unique_group, "--store", "zookeeper", "--format", "csv", "-o", str(path))
    assert cli(cluster, *args) == 0
    assert path.read_text().splitlines() == [
        "topic,partition,offset", f"{unique_topic},0,5", f"{unique_topic},1,7", f"{unique_topic},2,0",
    ]  # fmt: skip
    assert cli(cluster, "offsets", "import", "-g", unique_group, "--store", "kafka", "-i", str(path)) == 0
    assert kafka_committed(cluster, unique_group, unique_topic) == {0: -1, 1: -1, 2: -1}  # dry run by default
    assert cli(cluster, "offsets", "import", "-g", unique_group, "--store", "kafka", "-i", str(path), "--execute") == 0
    assert kafka_committed(cluster, unique_group, unique_topic) == LEGACY_STOPPED_AT
