"""A joining bridge connects its record fetcher while its embedded member joins the Kafka group: the first
routing table after the assignment then needs no metadata refresh, which would leave it to the fetch thread
and put a metadata round trip and a new connection between the claim and the first fetch."""

from __future__ import annotations

import pytest

from migrator.consumer.handoff import Handoff
from migrator.consumer.stream import KafkaStream
from migrator.kafka.fetcher import Fetcher, Route
from migrator.observe import ProcessingLog
from migrator.protocol.partition import TopicPartition
from tests.helpers.bridge import set_mode, start_bridge
from tests.helpers.kafka import make_topic

pytestmark = pytest.mark.integration

PARTITIONS = 4


def _first_table_applied_in_route(cluster, group: str, topic: str, connect: bool) -> set[TopicPartition]:
    """The partitions a fetcher whose fetch thread never runs has assigned once `route` returns."""
    fetcher = Fetcher(cluster.bootstrap_servers, group)
    try:
        if connect:
            fetcher.connect([topic], 10.0)
        stream = KafkaStream(f"{group}_b-0", Handoff())
        fetcher.route({TopicPartition(topic, p): Route(stream, 1, 0) for p in range(PARTITIONS)})
        return {TopicPartition(tp.topic, tp.partition) for tp in fetcher._consumer.assignment()}
    finally:
        fetcher.close()


def test_a_connected_fetcher_applies_its_first_table_at_once(cluster, unique_group, unique_topic) -> None:
    make_topic(cluster, unique_topic, PARTITIONS)
    everything = {TopicPartition(unique_topic, p) for p in range(PARTITIONS)}
    assert _first_table_applied_in_route(cluster, unique_group, unique_topic, connect=True) == everything
    # the same table on a fetcher not connected first waits for the fetch thread's metadata refresh
    assert _first_table_applied_in_route(cluster, unique_group, unique_topic, connect=False) == set()


def test_a_bridge_joining_in_mode_kafka_has_its_fetcher_connected_before_its_first_rebalance(
    cluster, unique_group, unique_topic, zk_client
) -> None:
    make_topic(cluster, unique_topic, PARTITIONS)
    set_mode(zk_client, unique_group, "kafka")
    bridge = start_bridge(cluster, unique_group, "b0", unique_topic, 1, ProcessingLog())
    try:  # create_message_streams returns as the worker starts; its first claim comes after ZooKeeper round trips
        known = dict(bridge.conn._fetcher._partition_counts)  # type: ignore[union-attr]
    finally:
        bridge.shutdown()
    assert known == {unique_topic: PARTITIONS}
