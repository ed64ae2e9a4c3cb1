"""Topic creation, producing and consuming against a test cluster with confluent-kafka.

`make_topic` waits until both the broker metadata and `/brokers/topics/<t>` show the topic, because
the migrator reads partitions from ZooKeeper while consumers read them from the broker.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol, cast

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from migrator.protocol.codecs import decode_broker_topic
from migrator.zk.paths import broker_topic
from tests.helpers.wait import wait_until
from tests.helpers.zk import zk_client

_QUIET = logging.getLogger("tests.kafka.probe")  # a probe's connection errors during a fault are expected

Record = bytes | str | tuple[bytes | str | None, bytes | str | None]


class KafkaCluster(Protocol):
    zookeeper: str
    bootstrap_servers: str


@dataclass(frozen=True)
class Consumed:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def admin(cluster: KafkaCluster) -> AdminClient:
    """An AdminClient whose futures keep it alive.

    librdkafka destroys a garbage-collected client and fails its pending futures with `_DESTROY`,
    which `admin(c).create_partitions(...)[t].result()` would otherwise hit.
    """
    return cast(AdminClient, _KeepAliveAdmin(AdminClient({"bootstrap.servers": cluster.bootstrap_servers})))


class _KeepAliveAdmin:
    def __init__(self, client: AdminClient) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            result = attr(*args, **kwargs)
            futures = result.values() if isinstance(result, dict) else [result]
            for future in futures:
                if isinstance(future, Future):
                    future.add_done_callback(lambda _f, client=self._client: client)
            return result

        return call


def make_topic(
    cluster: KafkaCluster,
    name: str,
    partitions: int = 1,
    replication: int = 1,
    config: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> str:
    """Create `name` and return it once every partition has a leader and ZooKeeper lists them."""
    client = admin(cluster)
    futures = client.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=replication, config=config or {})],
        operation_timeout=timeout,
    )
    futures[name].result(timeout=timeout)

    def broker_sees() -> bool:
        md = client.list_topics(topic=name, timeout=5).topics.get(name)
        return bool(
            md
            and md.error is None
            and len(md.partitions) == partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        )

    wait_until(broker_sees, timeout, what=f"broker metadata of topic {name}")
    with zk_client(cluster) as zk:

        def zk_sees() -> bool:
            data = zk.exists(broker_topic(name)) and zk.get(broker_topic(name))[0]
            return bool(data) and len(decode_broker_topic(data)) == partitions

        wait_until(zk_sees, timeout, what=f"{broker_topic(name)} in ZooKeeper")
    return name


def produce(cluster: KafkaCluster, topic: str, records: Iterable[Record], partition: int | None = None) -> int:
    """Produce `records` (values, or (key, value) pairs) synchronously; return how many were acked."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    errors: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    count = 0
    for record in records:
        key, value = record if isinstance(record, tuple) else (None, record)
        kwargs = {"partition": partition} if partition is not None else {}
        producer.produce(topic, value=value, key=key, on_delivery=on_delivery, **kwargs)
        producer.poll(0)
        count += 1
    remaining = producer.flush(30)
    if remaining or errors:
        raise KafkaException(f"{remaining} records not delivered to {topic}; errors: {errors[:3]}")
    return count


def consume(
    cluster: KafkaCluster, topic: str, count: int, group: str | None = None, timeout: float = 30.0
) -> list[Consumed]:
    """Read `count` records from the beginning of `topic` with a plain Kafka consumer."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group or f"helper-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
        }
    )
    out: list[Consumed] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            out.append(Consumed(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value()))
    finally:
        consumer.close()
    if len(out) < count:
        raise AssertionError(f"consumed {len(out)} of {count} records from {topic} in {timeout:.0f}s")
    return out


def high_watermarks(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0) -> dict[int, int]:
    """Every partition's high watermark. Around a broker's stop or return a leader moves and the answer is an
    error (NOT_LEADER_FOR_PARTITION, unknown partition) or none at all; it is asked again with a new client
    (a long-lived one was seen timing out for more than 30 s after a broker restart), for up to `timeout`."""
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    deadline = time.monotonic() + timeout
    marks: dict[int, int] = {}
    while True:
        probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermark-probe", "logger": _QUIET})
        try:
            for p in range(partitions):
                if p not in marks:
                    marks[p] = probe.get_watermark_offsets(KafkaTopicPartition(topic, p), timeout=10)[1]
            return marks
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
        finally:
            probe.close()
