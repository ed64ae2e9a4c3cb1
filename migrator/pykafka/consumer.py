"""`BalancedConsumer`: pykafka's consumer API on a migrator connector in the pykafka layout.

A thin facade: one `ConsumerConnector` (`zookeeper.layout=pykafka`) with one stream of the topic. What a
pykafka program calls maps onto migrator's processing rule (docs/application.md):

- `consume()` asks the stream for the next record, so the record handed out before counts as processed;
- `commit_offsets()` commits every processed record and the one in hand, as pykafka commits the offset after
  the last record `consume()` returned;
- `stop()` shuts the connector down (committing with `auto_commit_enable`), releasing its partitions.

The stream belongs to the thread that consumes: call `consume()` (or iterate) from one thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from migrator.connector import ConsumerConnector
from migrator.consumer.stream import ConsumerTimeout
from migrator.protocol.message import Message as RawMessage
from migrator.pykafka.common import OffsetType
from migrator.pykafka.exceptions import ConsumerStoppedException, UnsupportedOption
from migrator.pykafka.message import Message, NamedTopic, Partition
from migrator.pykafka.options import consumer_properties

POLL_MS = 100
"""The connector's `consumer.timeout.ms`: how long one wait for a record lasts before `consume()` looks at
its own timeout (pykafka's `consumer_timeout_ms`), `block=False`, and whether the consumer was stopped."""


class _TopicName:
    def __init__(self, name: bytes) -> None:
        self.name = name


class BalancedConsumer:
    """pykafka's `BalancedConsumer(topic, cluster, consumer_group, **kwargs)` (its keyword arguments: see
    `migrator.pykafka.options`). `properties` adds migrator-only connector properties to the cluster's."""

    def __init__(
        self,
        topic: NamedTopic | str | bytes,
        cluster: Any,
        consumer_group: str | bytes,
        properties: Mapping[str, object] | None = None,
        **kwargs: Any,
    ) -> None:
        self._topic: NamedTopic = _TopicName(_bytes(topic)) if isinstance(topic, str | bytes) else topic
        extra = {**getattr(cluster, "properties", {}), **(properties or {})}
        options = consumer_properties(self._topic.name, consumer_group, kwargs, getattr(cluster, "hosts", None), extra)
        timeout = options.consumer_timeout_ms
        self._properties = {
            **options.properties,
            "consumer.timeout.ms": POLL_MS if timeout < 0 else min(timeout, POLL_MS),
        }
        self._name = options.topic
        self._timeout_ms = timeout
        self._deserializer: Callable[[Any, Any], tuple[Any, Any]] | None = options.deserializer
        self._connector: ConsumerConnector | None = None
        self._records: Iterator[RawMessage] | None = None
        self._last: dict[int, int] = {}
        self._lock = threading.Lock()
        if options.auto_start:
            self.start()

    @property
    def topic(self) -> NamedTopic:
        return self._topic

    @property
    def connector(self) -> ConsumerConnector | None:
        """The connector behind this consumer while it runs (migrator's API: `authority`, `owned`, ...)."""
        return self._connector

    @property
    def partitions(self) -> dict[int, Partition]:
        """The partitions this consumer owns now, by id."""
        connector = self._connector
        if connector is None:
            return {}
        return {tp.partition: Partition(tp.partition, self._topic) for tp in connector.owned if tp.topic == self._name}

    @property
    def held_offsets(self) -> dict[int, int] | None:
        """Per owned partition, the offset of the last record `consume()` returned (`OffsetType.EARLIEST`, -2,
        when none yet); None when stopped, as pykafka."""
        if self._connector is None:
            return None
        return {pid: self._last.get(pid, OffsetType.EARLIEST) for pid in self.partitions}

    def start(self) -> None:
        """Join the group: register, take part in the assignment, start fetching. Nothing when running."""
        with self._lock:
            if self._connector is not None:
                return
            connector = ConsumerConnector(self._properties)
            try:
                stream = connector.create_message_streams({self._name: 1})[self._name][0]
            except BaseException:
                connector.shutdown()
                raise
            self._last.clear()
            self._connector, self._records = connector, iter(stream)

    def stop(self) -> None:
        """Leave the group: commit (with `auto_commit_enable`), release the partitions, close. Safe twice."""
        with self._lock:
            connector, self._connector = self._connector, None
        if connector is not None:
            connector.shutdown()

    def consume(self, block: bool = True) -> Message | None:
        """The next record; None when `block=False` and none is ready within `POLL_MS`, or after
        `consumer_timeout_ms` without one. Raises `ConsumerStoppedException` once stopped."""
        deadline = None if self._timeout_ms < 0 else time.monotonic() + self._timeout_ms / 1000.0
        while True:
            records = self._records
            if self._connector is None or records is None:
                raise ConsumerStoppedException("the consumer is stopped; start() it again")
            try:
                return self._message(next(records))
            except ConsumerTimeout:
                if not block or (deadline is not None and time.monotonic() >= deadline):
                    return None
            except StopIteration:
                raise ConsumerStoppedException("the consumer was stopped") from None

    def __iter__(self) -> Iterator[Message]:
        """Records until `consume()` returns None (`consumer_timeout_ms` without one), as pykafka."""
        while (message := self.consume(block=True)) is not None:
            yield message

    def commit_offsets(self, partition_offsets: object = None) -> None:
        """Commit the offset after the last record `consume()` returned, per partition (that record counts as
        processed). Explicit `partition_offsets` are refused: migrator commits only processed positions."""
        if partition_offsets is not None:
            raise UnsupportedOption({"commit_offsets(partition_offsets)": "not supported: call commit_offsets()"})
        if self._connector is None:
            raise ConsumerStoppedException("cannot commit offsets: the consumer is stopped")
        self._connector.commit_offsets()

    def reset_offsets(self, partition_offsets: object = None) -> None:
        """Refused: a member cannot move the group's position (use `migrator offsets` while it is stopped)."""
        raise UnsupportedOption({"reset_offsets": "not supported: use `migrator offsets` while the group is stopped"})

    def _message(self, raw: RawMessage) -> Message:
        self._last[raw.partition] = raw.offset
        value, key = raw.value, raw.key
        if self._deserializer is not None:
            value, key = self._deserializer(value, key)
        timestamp = raw.timestamp if raw.timestamp >= 0 else None
        partition = Partition(raw.partition, self._topic)
        return Message(value, key, raw.offset, raw.partition, partition, timestamp)

    def __repr__(self) -> str:
        return f"<migrator.pykafka.BalancedConsumer group={self._properties['group.id']!r} topic={self._name!r}>"


def _bytes(name: str | bytes) -> bytes:
    return name.encode() if isinstance(name, str) else name
