"""The brokers that teams still on ZooKeeper coordination run: Kafka 2.8.2 (ZooKeeper 3.5.9) and Kafka 1.1.1
(ZooKeeper 3.4.10), each a real dev cluster of that release (`DevCluster.start(kafka_version=...)`).

On each, under continuous production and the observer: three bridges switch live zookeeper -> kafka, a
plain confluent-kafka consumer replaces one bridge and hands back to it, and the bridges switch back to
zookeeper. Nothing may be lost, processed twice or processed outside an ownership (plain consumers hold no
owner nodes, so only the connectors' records go to the owner check; the overlap check covers everybody).
"""

from __future__ import annotations

import time

import pytest

from migrator.demo.workload import PlainConsumer
from migrator.observe import OwnersWatcher, ProcessingLog
from migrator.observe.verdict import judge
from tests.helpers.bridge import set_mode, start_bridge, wait_converged
from tests.helpers.kafka import make_topic
from tests.helpers.wait import wait_until
from tests.helpers.workload import Member, SequencedProducer
from tests.helpers.zk import zk_client

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]

PARTITIONS = 8


def consuming(log: ProcessingLog, topic: str) -> None:
    """Every partition processes a record that started after this call: the group is consuming."""
    since = time.time_ns()
    wait_until(lambda: len({r.partition for r in log.records() if r.topic == topic and r.start_ns > since})
               == PARTITIONS, timeout=60, what="every partition consumed again")  # fmt: skip


@pytest.mark.parametrize("kafka_version", ["2.8.2", "1.1.1"])
def test_live_switches_and_a_plain_consumer_on_an_old_broker(
    cluster_factory, unique_group, unique_topic, kafka_version: str
) -> None:
    cluster = cluster_factory(kafka_version=kafka_version)
    g, t = unique_group, unique_topic
    make_topic(cluster, t, PARTITIONS)
    log = ProcessingLog()
    with zk_client(cluster) as zk, OwnersWatcher(cluster.zookeeper, g) as watcher:
        producer = SequencedProducer(cluster, t, rate=200).start()
        members: dict[str, Member | PlainConsumer] = {
            f"b{i}": start_bridge(cluster, g, f"b{i}", t, 2, log) for i in range(3)
        }
        bridges = {f"{g}_b{i}" for i in range(3)}
        wait_converged(zk, g, t, PARTITIONS, "zookeeper", bridges)
        consuming(log, t)

        set_mode(zk, g, "kafka")
        wait_converged(zk, g, t, PARTITIONS, "kafka", bridges)
        consuming(log, t)

        members.pop("b2").shutdown()  # a plain Kafka consumer replaces a bridge, then hands back to one
        members["plain"] = PlainConsumer(cluster.bootstrap_servers, g, t, log, "plain").start()
        # the bridges alone can keep every partition consuming until the plain consumer's join completes
        wait_until(lambda: any(r.member == "plain" for r in log.records()), timeout=60,
                   what="the plain consumer to process records")  # fmt: skip
        consuming(log, t)
        members.pop("plain").shutdown()
        members["b2"] = start_bridge(cluster, g, "b2", t, 2, log)
        wait_converged(zk, g, t, PARTITIONS, "kafka", bridges)
        consuming(log, t)

        set_mode(zk, g, "zookeeper")
        wait_converged(zk, g, t, PARTITIONS, "zookeeper", bridges)
        consuming(log, t)

        produced = producer.stop()
        wait_until(lambda: produced <= {r.key for r in log.records()}, timeout=60, what="every record processed")
        for m in members.values():
            m.shutdown()
    records = log.records()
    verdict = judge(produced, records)
    owner_check = judge(produced, [r for r in records if r.member != "plain"], watcher.intervals())
    assert verdict.ok and not verdict.duplicates, verdict.summary()
    assert not owner_check.owner_violations, owner_check.summary()
    assert any(r.member == "plain" for r in records), "the plain consumer processed nothing"
    print(f"\nKafka {kafka_version}: {verdict.counts()}")
