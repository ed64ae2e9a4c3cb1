"""A thin, bounded-time adapter over confluent-kafka's AdminClient.

It returns immutable views (no confluent-kafka types leak out) so that decisions elsewhere stay pure,
and it turns every broker failure into one `KafkaUnavailable` with a line an operator can act on.

Requests routed to a group coordinator (DescribeConsumerGroups,
AlterConsumerGroupOffsets) must never reach librdkafka's own timeout while the client lives: when that
timeout fires while the request still waits for its coordinator, the coordinator's return later makes
librdkafka release the request twice and abort the process (`rd_kafka_enq_once_del_source_return:
Assertion 'eonce->refcnt > 0'`; librdkafka issue #4605, see docs/runbook.md). So librdkafka gets a longer
timeout than this adapter waits, and a client left with such a request unanswered is destroyed at once
and replaced (`_coordinator_result`): destruction ends the request without the faulty path.

Committed offsets are read with a consumer, never with the AdminClient's ListConsumerGroupOffsets: when that
request's OffsetFetch is answered NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE (the group's coordinator moving
during a broker restart), librdkafka's `rd_kafka_handle_OffsetFetch` asks the client's consumer group to look
up its coordinator again, and an AdminClient has no consumer group: a NULL dereference, SIGSEGV in
`rd_kafka_cgrp_op` (seen with librdkafka 2.16.0; the same code is in librdkafka's master as of July 2026). A
consumer with the group's `group.id` that never subscribes has that consumer group, so the same answer only
makes it look up the coordinator, and it never joins the group.

An AdminClient also caches each group's coordinator and never forgets a broker that answers NOT_COORDINATOR: the
entry goes only after `metadata.max.age.ms` (15 min) unused, and a bridge uses it every few seconds. When the
coordinator moves away from a broker that stays up (the controller's preferred-leader election after a restarted
broker is back), every DescribeConsumerGroups fails until the process ends, and bridges that fell back to
ZooKeeper meanwhile never see Kafka healthy again (librdkafka 2.16.0: `rd_kafka_coord_cache_evict` is only called
by the transaction manager; see docs/runbook.md). So after such an answer the next coordinator request goes through
a new client, which looks the coordinator up afresh.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, OffsetSpec, ResourceType

from migrator.errors import MigratorError
from migrator.logs import librdkafka_logger
from migrator.protocol.kafka import KafkaGroup, KafkaMember
from migrator.protocol.partition import TopicPartition

DEFAULT_TIMEOUT_S = 10.0
COORDINATOR_MARGIN_S = 60.0
"""librdkafka's timeout of a coordinator request exceeds the adapter's wait by this much, so that the client is
destroyed long before librdkafka's own timer could fire (see the module docstring)."""
T = TypeVar("T")

log = logging.getLogger(__name__)


COORDINATOR_MOVED = frozenset({KafkaError.NOT_COORDINATOR})
"""Answers meaning "ask the group's coordinator afresh": an AdminClient's cached coordinator is stale."""


class KafkaUnavailable(MigratorError):
    """The brokers did not answer in time, or answered with an error (`code`: librdkafka's, when it gave one)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


def admin_config(bootstrap_servers: str, properties: Mapping[str, Any] | None, timeout_s: float) -> dict[str, Any]:
    """AdminClient settings: connection set-up bounded by `timeout_s`, then the pass-through properties."""
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap_servers,
        "socket.connection.setup.timeout.ms": int(timeout_s * 1000),
        "logger": librdkafka_logger(),
    }
    conf.update(properties or {})
    return conf


def offsets_reader(admin_conf: Mapping[str, Any], group: str) -> Consumer:
    """The consumer that reads a group's committed offsets (see the module docstring): the admin client's settings
    with the group; it never subscribes (so never joins the group) and never commits."""
    return Consumer({**admin_conf, "group.id": group, "enable.auto.commit": False, "enable.auto.offset.store": False})


def read_committed(
    reader: Consumer, group: str, partitions: Iterable[TopicPartition], timeout_s: float, bootstrap_servers: str
) -> dict[TopicPartition, int]:
    """Kafka-committed next offsets of `group` read with its `offsets_reader`; -1 where the group has none."""
    tps = [KafkaTopicPartition(t, p) for t, p in partitions]
    if not tps:
        return {}
    try:
        result = reader.committed(tps, timeout=timeout_s)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else None
        if getattr(error, "code", lambda: None)() == KafkaError._TIMED_OUT:
            raise KafkaUnavailable(
                f"list offsets of group {group}: no answer from Kafka at {bootstrap_servers} within {timeout_s:g}s"
            ) from exc
        raise KafkaUnavailable(f"list offsets of group {group}: {error.str() if error else exc}") from exc
    finally:
        reader.poll(0)  # hand librdkafka's queued log lines to the `logger` (nothing else polls it)
    return {_tp(tp): (tp.offset if tp.offset >= 0 else -1) for tp in result}


def group_from_description(group: str, desc: Any) -> KafkaGroup:
    """The immutable view of a confluent-kafka `ConsumerGroupDescription`."""
    members = tuple(
        KafkaMember(
            member_id=m.member_id,
            client_id=m.client_id,
            host=m.host,
            group_instance_id=m.group_instance_id,
            partitions=tuple(sorted(_tp(tp) for tp in (m.assignment.topic_partitions or []))),
        )
        for m in desc.members
    )
    state = getattr(desc.state, "name", str(desc.state))
    return KafkaGroup(group_id=group, state=state, assignor=desc.partition_assignor or "", members=members)


def _tp(tp: KafkaTopicPartition) -> TopicPartition:
    return TopicPartition(tp.topic, tp.partition)


class KafkaAdmin:
    """Admin calls with one timeout each; `properties` are passed through (e.g. SASL/SSL settings)."""

    def __init__(
        self,
        bootstrap_servers: str,
        properties: Mapping[str, Any] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.timeout_s = timeout_s
        self._conf = admin_config(bootstrap_servers, properties, timeout_s)
        self._admin = AdminClient(self._conf)
        self._readers: dict[str, Consumer] = {}
        """Per group, the consumer that reads its committed offsets (see the module docstring)."""
        self._stale_coordinator = False
        """The last coordinator request was answered NOT_COORDINATOR: replace the client before the next one."""

    @property
    def _coordinator_timeout_s(self) -> float:
        return self.timeout_s + COORDINATOR_MARGIN_S

    def _result(self, future: Future[T], what: str) -> T:
        try:
            return future.result(timeout=self.timeout_s)
        except TimeoutError as exc:
            raise KafkaUnavailable(
                f"{what}: no answer from Kafka at {self.bootstrap_servers} within {self.timeout_s:g}s"
            ) from exc
        except KafkaException as exc:
            error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            message = error.str() if error is not None else str(exc)
            raise KafkaUnavailable(f"{what}: {message}", error.code() if error is not None else None) from exc
        finally:
            self._admin.poll(0)  # hand librdkafka's queued log lines to the `logger` (nothing else polls it)

    def _metadata(self, what: str, topic: str | None = None) -> Any:
        try:
            return self._admin.list_topics(topic=topic, timeout=self.timeout_s)
        except KafkaException as exc:
            raise KafkaUnavailable(f"{what}: {exc}") from exc
        finally:
            self._admin.poll(0)

    def _coordinator_call(self, send: Callable[[AdminClient], Future[T]], what: str) -> T:
        """A coordinator-routed request (see the module docstring). If it is still pending when the wait ends
        (timeout, interrupt), the client that holds it is destroyed now, before librdkafka's own timeout can
        fire. If the answer says the coordinator moved, the client's cached coordinator is stale: the next
        coordinator request goes through a new client. Not this one again at once: right after a broker restart
        a new client often gets the same answer (the coordinator still loading) or none in time, and the caller
        asks again on its own clock anyway (the worker's re-check); retrying at once could double the time a
        worker waits for Kafka."""
        if self._stale_coordinator:
            self._stale_coordinator = False
            self._replace_client("its cached group coordinator answered that it is not the coordinator")
        future = send(self._admin)
        try:
            return self._result(future, what)
        except KafkaUnavailable as exc:
            self._stale_coordinator = exc.code in COORDINATOR_MOVED
            raise
        finally:
            if not future.done():
                self._replace_client("a coordinator request was left unanswered")

    def _replace_client(self, why: str) -> None:
        stale, self._admin = self._admin, AdminClient(self._conf)
        del stale  # the last reference: confluent-kafka destroys the librdkafka handle here, synchronously
        log.debug("replaced the Kafka admin client: %s", why)

    def describe_group(self, group: str) -> KafkaGroup:
        def send(admin: AdminClient) -> Future[Any]:
            return admin.describe_consumer_groups([group], request_timeout=self._coordinator_timeout_s)[group]

        return group_from_description(group, self._coordinator_call(send, f"describe group {group}"))

    def list_groups(self) -> list[str]:
        result = self._result(self._admin.list_consumer_groups(request_timeout=self.timeout_s), "list groups")
        return sorted(g.group_id for g in result.valid)

    def committed_offsets(self, group: str, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Kafka-committed next offsets; -1 where the group has none."""
        partitions = list(partitions)
        if not partitions:
            return {}
        reader = self._readers.get(group)
        if reader is None:
            reader = self._readers[group] = offsets_reader(self._conf, group)
        return read_committed(reader, group, partitions, self.timeout_s, self.bootstrap_servers)

    def alter_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Write offsets for an empty group (the broker refuses a group with live members)."""
        tps = [KafkaTopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]

        def send(admin: AdminClient) -> Future[Any]:
            request = [ConsumerGroupTopicPartitions(group, tps)]
            return admin.alter_consumer_group_offsets(request, request_timeout=self._coordinator_timeout_s)[group]

        result = self._coordinator_call(send, f"alter offsets of group {group}")
        failed = [tp for tp in result.topic_partitions if tp.error is not None]
        if failed:
            raise KafkaUnavailable(f"alter offsets of group {group}: {failed[0].error.str()}")

    def log_end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Log end offsets of the partitions whose leader is a live broker; the others are left out.

        librdkafka sends ListOffsets to each partition's leader, and while it waits for a leader that is down it
        asks that broker's thread to connect at once on every broker state change, skipping the reconnect
        backoff (`rd_kafka_broker_get_async` -> `rd_kafka_broker_schedule_connection`); in the rolling-restart
        drill a bridge's admin client logged "Connection refused ... 190,000-290,000 identical error(s)
        suppressed" for the stopped broker, which starved a 2-core host until ZooKeeper sessions expired.
        Fresh metadata names only live brokers, and refreshes the leaders librdkafka routes by."""
        wanted = set(partitions)
        if not wanted:
            return {}
        md = self._metadata("metadata")
        live = set(md.brokers)
        led = {
            tp
            for tp in wanted
            if (t := md.topics.get(tp.topic)) is not None
            and (p := t.partitions.get(tp.partition)) is not None
            and p.leader in live
        }
        return self._list_offsets(sorted(led), OffsetSpec.latest(), "log end")

    def earliest_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Log start offsets (the oldest record still kept)."""
        return self._list_offsets(sorted(set(partitions)), OffsetSpec.earliest(), "log start")

    def offsets_for_time(self, partitions: Iterable[TopicPartition], timestamp_ms: int) -> dict[TopicPartition, int]:
        """The first offset whose record timestamp is >= `timestamp_ms`; -1 where there is none."""
        return self._list_offsets(sorted(set(partitions)), OffsetSpec.for_timestamp(timestamp_ms), "offset for time")

    def _list_offsets(
        self, partitions: Iterable[TopicPartition], spec: OffsetSpec, what: str
    ) -> dict[TopicPartition, int]:
        request = {KafkaTopicPartition(t, p): spec for t, p in partitions}
        if not request:
            return {}
        futures = self._admin.list_offsets(request, request_timeout=self.timeout_s)
        return {_tp(tp): self._result(f, f"{what} of {tp.topic}-{tp.partition}").offset for tp, f in futures.items()}

    def partitions(self, topic: str) -> tuple[int, ...] | None:
        """Partition ids of a topic from broker metadata; None when the topic does not exist."""
        md = self._metadata(f"metadata of {topic}", topic)
        tmd = md.topics.get(topic)
        if tmd is None or tmd.error is not None or not tmd.partitions:
            return None
        return tuple(sorted(tmd.partitions))

    def topics(self) -> dict[str, int]:
        """Every topic with its partition count."""
        md = self._metadata("metadata")
        return {name: len(t.partitions) for name, t in md.topics.items() if t.error is None}

    def group_max_size(self) -> int | None:
        """The smallest `group.max.size` among the brokers (the coordinator may be any of them)."""
        md = self._metadata("metadata")
        sizes: list[int] = []
        for broker in md.brokers:  # one request per broker: Kafka refuses two BROKER resources in one call
            resource = ConfigResource(ResourceType.BROKER, str(broker))
            future = self._admin.describe_configs([resource], request_timeout=self.timeout_s)[resource]
            entries = self._result(future, f"describe configs of broker {broker}")
            entry = entries.get("group.max.size")
            if entry is not None and entry.value is not None:
                sizes.append(int(entry.value))
        return min(sizes) if sizes else None

    def create_topic(self, topic: str, partitions: int, replication: int = 1) -> None:
        futures = self._admin.create_topics(
            [NewTopic(topic, num_partitions=partitions, replication_factor=replication)],
            request_timeout=self.timeout_s,
        )
        self._result(futures[topic], f"create topic {topic}")
