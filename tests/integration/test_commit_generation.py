"""A group member's commit that the broker refuses because the group has moved past the member's
generation is reported as `GenerationMoved` (the offset store then does not retry it), while a commit
with the current generation is taken. Real broker, two confluent-kafka members of one group."""

from __future__ import annotations

import contextlib
import threading

from confluent_kafka import Consumer, KafkaException
from kazoo.client import KazooClient

from migrator.demo.group import create_topic
from migrator.kafka.admin import KafkaAdmin
from migrator.kafka.commit import GENERATION_MOVED_CODES, GenerationMoved, member_commit_sync
from migrator.protocol.partition import TopicPartition
from tests.helpers.kafka import KafkaCluster
from tests.helpers.wait import wait_until


def member(cluster: KafkaCluster, group: str, topic: str) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            "max.poll.interval.ms": 6000,  # the member that stops polling is out after 6 s
        }
    )
    consumer.subscribe([topic])
    return consumer


def test_a_commit_after_the_group_moved_on_is_refused_as_generation_moved(
    cluster: KafkaCluster, zk_client: KazooClient, unique_group: str, unique_topic: str
) -> None:
    create_topic(KafkaAdmin(cluster.bootstrap_servers), zk_client, unique_topic, 2)
    first = member(cluster, unique_group, unique_topic)
    second: Consumer | None = None
    poller: threading.Thread | None = None
    stop = threading.Event()
    try:
        wait_until(lambda: first.poll(0.2) is None and first.assignment(), what="the first member's assignment")
        offsets = {TopicPartition(unique_topic, 0): 0}
        assert member_commit_sync(first, offsets) == set(offsets)

        second = member(cluster, unique_group, unique_topic)
        joining = second

        def poll_second() -> None:
            while not stop.is_set():
                joining.poll(0.1)

        poller = threading.Thread(target=poll_second, daemon=True)
        poller.start()

        def refused() -> GenerationMoved | None:
            try:
                member_commit_sync(first, offsets)  # the first member polls no more: it cannot rejoin
            except GenerationMoved as exc:
                return exc
            return None

        refusal = wait_until(refused, timeout=30, interval=0.3, what="a commit refused for the generation")
        assert refusal.code in GENERATION_MOVED_CODES
    finally:
        stop.set()
        if poller is not None:
            poller.join(timeout=5)  # its poll loop ends before its client is closed
        for consumer in (first, second):
            if consumer is not None:
                with contextlib.suppress(KafkaException):
                    consumer.close()
