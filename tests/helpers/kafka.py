"""Topic creation, producing and consuming against a test cluster with confluent-kafka.

`make_topic` waits until both the broker metadata and `/brokers/topics/<t>` show the topic, because
the migrator reads partitions from ZooKeeper while consumers read them from the broker.
"""

from __future__ import annotations

import logging
import multiprocessing
import queue
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol, cast

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTP
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

    def read_enough() -> bool:
        msg = consumer.poll(0.5)
        if msg is not None:
            if msg.error():
                raise KafkaException(msg.error())
            out.append(Consumed(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value()))
        return len(out) >= count

    try:
        consumer.subscribe([topic])
        wait_until(read_enough, timeout, interval=0, what=f"{count} records from {topic}")
    finally:
        consumer.close()
    return out


def high_watermarks(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0) -> dict[int, int]:
    """Every partition's high watermark. Around a broker's stop or return a leader moves and the answer is an
    error (NOT_LEADER_FOR_PARTITION, unknown partition) or none at all; it is asked again with a new client
    (a long-lived one can keep timing out for more than 30 s after a broker restart), for up to `timeout`."""
    deadline = time.monotonic() + timeout
    marks: dict[int, int] = {}
    while True:
        probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermark-probe", "logger": _QUIET})
        try:
            for p in range(partitions):
                if p not in marks:
                    marks[p] = probe.get_watermark_offsets(KafkaTP(topic, p), timeout=10)[1]
            return marks
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
        finally:
            probe.close()


class PollingMember:
    """A plain Kafka group member: a confluent-kafka Consumer that its own thread polls, so that it stays in the
    group and serves every rebalance until `stall` or `close`. It never commits on its own.

    Tests use it for what a bridge's embedded member or a plain application looks like to the brokers.
    `paused` keeps it from fetching, like an embedded member; `config` overrides the consumer settings.
    """

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topic: str,
        client_id: str,
        *,
        paused: bool = False,
        config: Mapping[str, str | int] | None = None,
    ) -> None:
        self.assigned: list[int] = []
        self._paused = paused
        self._commits: queue.Queue[tuple[list[KafkaTP], threading.Event]] = queue.Queue()
        self._halt = threading.Event()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": client_id,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "partition.assignment.strategy": "range",
                **(config or {}),
            }
        )
        self._consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"member-{client_id}")
        self._thread.start()

    def _on_assign(self, consumer: Consumer, partitions: list[KafkaTP]) -> None:
        if self._paused:
            consumer.pause(partitions)
        self.assigned = sorted(p.partition for p in partitions)

    def _on_revoke(self, _consumer: Consumer, _partitions: list[KafkaTP]) -> None:
        self.assigned = []

    def commit(self, offsets: list[KafkaTP]) -> threading.Event:
        """Commit through the group (its generation and member id), from the poll thread; set when done."""
        done = threading.Event()
        self._commits.put((offsets, done))
        return done

    def _run(self) -> None:
        while not self._halt.is_set():
            self._consumer.poll(0.1)
            try:
                offsets, done = self._commits.get_nowait()
            except queue.Empty:
                continue
            try:
                self._consumer.commit(offsets=offsets, asynchronous=False)
                done.set()
            except KafkaException:  # e.g. a rebalance in between: retry after the next poll
                self._commits.put((offsets, done))

    def stall(self) -> None:
        """Stop polling but stay in the group: the next rebalance waits for this member (up to its
        max.poll.interval.ms), then the coordinator drops it."""
        self._halt.set()
        self._thread.join(15)

    def close(self) -> None:
        """Leave the group (a stalled member may wait here for a rebalance it never serves: see `StalledMember`)."""
        self.stall()
        self._consumer.close()


def _stalling_member(
    bootstrap: str, group: str, topic: str, client_id: str, config: dict[str, int], stall: Any
) -> None:
    """The child of `StalledMember`: a `PollingMember` that stops polling once `stall` is set, and waits to be
    killed."""
    member = PollingMember(bootstrap, group, topic, client_id, config=config)
    stall.wait()
    member.stall()
    time.sleep(3600)


class StalledMember:
    """A `PollingMember` in a process of its own that stops polling on `stall()` and is killed by `kill()`. A
    stalled member's close() waits inside librdkafka's rebalance callback while holding the GIL, which can
    deadlock a test's own librdkafka clients; killed in its own process, it leaves the group by its session
    timeout instead."""

    def __init__(self, bootstrap: str, group: str, topic: str, client_id: str, config: dict[str, int]) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._stall = ctx.Event()
        self._process = ctx.Process(
            target=_stalling_member, args=(bootstrap, group, topic, client_id, config, self._stall), daemon=True
        )
        self._process.start()

    def stall(self) -> None:
        self._stall.set()

    def kill(self) -> None:
        self._process.kill()
        self._process.join(10)


COORDINATOR_RETURNS: Mapping[str, object] = {
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 4,
    "leader.imbalance.check.interval.seconds": 5,
}
"""Broker settings under which a group's coordinator moves back to a restarted broker within seconds: the
controller's preferred-leader election (every `leader.imbalance.check.interval.seconds`, 300 s by default) gives
it its `__consumer_offsets` partitions back, so the coordinator moves away from a broker that stays up."""


def coordinator(bootstrap: str, group: str) -> int | None:
    """The group's coordinator as a new client finds it (None while no broker answers for the group)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        return int(admin.describe_consumer_groups([group], request_timeout=10)[group].result(15).coordinator.id)
    except (KafkaException, TimeoutError):
        return None
