"""The embedded Kafka group member of a bridge (KIP-125's EKC).

It only takes part in Kafka group coordination: it subscribes, pauses every partition it is given and
never hands out a record. Its rebalance callbacks become events for the connector's worker; the revoke
callback blocks until the worker has released, so plain Kafka consumers that join later get a partition
only after the bridge stopped processing it. It also commits offsets with its generation and member id,
which the broker demands for a group with live members (CONTRACT §4).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from migrator.assign.model import TopicPartition
from migrator.coordination.events import Event, KafkaAssigned, KafkaRevoked, KafkaUnavailable

log = logging.getLogger(__name__)

# Eager protocols that plain confluent-kafka (range,roundrobin) and Java (range,cooperative-sticky)
# consumers share: the group agrees on range.
DEFAULT_ASSIGNMENT_STRATEGY = "range,roundrobin"
UNAVAILABLE_CODES = {KafkaError.GROUP_MAX_SIZE_REACHED, KafkaError._ALL_BROKERS_DOWN, KafkaError._FATAL}
REVOKE_WAIT_S = 240.0  # below the default max.poll.interval.ms, so the broker does not evict us meanwhile


class EmbeddedMember:
    def __init__(
        self,
        properties: Mapping[str, str],
        poll_interval_ms: int,
        post: Callable[[Event], None],
    ) -> None:
        conf: dict[str, Any] = {
            "partition.assignment.strategy": DEFAULT_ASSIGNMENT_STRATEGY,
            "enable.auto.offset.store": False,
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 1000,
        }
        conf.update(properties)
        conf["enable.auto.commit"] = False
        conf["error_cb"] = self._on_error
        self._post = post
        self._poll_s = poll_interval_ms / 1000.0
        self._consumer = Consumer(conf)
        self._topics: Sequence[str] | None = None
        self._subscribed: tuple[str, ...] = ()
        self._closing = threading.Event()
        self.joined = threading.Event()  # set at the first assignment
        self._assignment: tuple[TopicPartition, ...] = ()
        self._thread = threading.Thread(target=self._run, name=f"embedded-{conf.get('client.id')}", daemon=True)
        self._client_id = str(conf.get("client.id", ""))

    @property
    def client_id(self) -> str:
        return self._client_id

    @property
    def assignment(self) -> tuple[TopicPartition, ...]:
        return self._assignment

    def member_id(self) -> str:
        try:
            return self._consumer.memberid() or ""
        except (KafkaException, RuntimeError):
            return ""

    def start(self, topics: Sequence[str]) -> None:
        self._topics = tuple(sorted(topics))
        self._thread.start()

    def subscribe(self, topics: Sequence[str]) -> None:
        """Change the subscription (wildcard topics appeared or vanished); applied by the poll thread."""
        self._topics = tuple(sorted(topics))

    def commit(self, offsets: Mapping[TopicPartition, int]) -> set[TopicPartition]:
        """Commit synchronously with the member's generation; returns the partitions Kafka accepted."""
        if not offsets:
            return set()
        tps = [KafkaTopicPartition(t, p, o) for (t, p), o in offsets.items()]
        try:
            result = self._consumer.commit(offsets=tps, asynchronous=False)
        except KafkaException as exc:
            log.info("kafka commit through the embedded member failed: %s", exc)
            return set()
        return {TopicPartition(tp.topic, tp.partition) for tp in result or [] if tp.error is None}

    def committed(self, tps: Sequence[TopicPartition], timeout_s: float = 10.0) -> dict[TopicPartition, int]:
        if not tps:
            return {}
        result = self._consumer.committed([KafkaTopicPartition(t, p) for t, p in tps], timeout=timeout_s)
        return {TopicPartition(tp.topic, tp.partition): (tp.offset if tp.offset >= 0 else -1) for tp in result}

    def close(self) -> None:
        """Leave the group. The worker has released everything already, so revoke callbacks return at once."""
        self._closing.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    # -- the poll thread -----------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._closing.is_set():
                if self._topics is not None and self._topics != self._subscribed:
                    self._subscribed = tuple(self._topics)
                    self._consumer.subscribe(
                        list(self._subscribed), on_assign=self._on_assign, on_revoke=self._on_revoke,
                        on_lost=self._on_lost,
                    )
                msg = self._consumer.poll(self._poll_s)
                if msg is not None and msg.error() is not None:
                    self._on_error(msg.error())
                elif msg is not None:
                    # paused partitions deliver nothing; a record here means a pause raced an assign
                    log.warning("embedded member received a record of %s-%s; pausing", msg.topic(), msg.partition())
                    self._consumer.pause([KafkaTopicPartition(msg.topic(), msg.partition())])
        except Exception:
            log.exception("embedded member poll loop failed")
            self._post(KafkaUnavailable("embedded member poll loop failed"))
        finally:
            try:
                self._consumer.close()
            except (KafkaException, RuntimeError):
                log.debug("embedded member close failed", exc_info=True)

    def _on_assign(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        consumer.pause(partitions)  # it never fetches
        self._assignment = tuple(sorted(TopicPartition(p.topic, p.partition) for p in partitions))
        self._post(KafkaAssigned(self._assignment))
        self.joined.set()

    def _on_revoke(self, consumer: Consumer, partitions: list[KafkaTopicPartition], lost: bool = False) -> None:
        self._assignment = ()
        if self._closing.is_set():
            return
        event = KafkaRevoked(lost=lost)
        self._post(event)
        started = time.monotonic()
        try:
            event.done.result(timeout=REVOKE_WAIT_S)
        except TimeoutError:
            log.error("worker did not release within %.0fs of a Kafka revoke", time.monotonic() - started)

    def _on_lost(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        self._on_revoke(consumer, partitions, lost=True)

    def _on_error(self, error: KafkaError) -> None:
        if error.code() in UNAVAILABLE_CODES:
            log.warning("Kafka coordination unavailable: %s", error)
            self._post(KafkaUnavailable(f"{error.name()} ({error.code()}): {error.str()}"))
        else:
            log.info("embedded member: %s", error)
