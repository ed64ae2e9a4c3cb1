"""The records and partitions the drop-in API hands out, with the fields pykafka's have."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Protocol


class NamedTopic(Protocol):
    """Anything with pykafka's `Topic.name` (bytes): ours, or the topic object an application built."""

    @property
    def name(self) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Partition:
    """pykafka's `Partition` as applications read it: `id` and `topic` (`topic.name` is bytes)."""

    id: int
    topic: NamedTopic


@dataclass(frozen=True, slots=True)
class Message:
    """One record, as pykafka's `Message`: `value` and `partition_key` (after the consumer's `deserializer`
    when it has one), `offset`, `partition_id`, `partition`, `timestamp` (ms since the epoch, or None)."""

    value: Any
    partition_key: Any
    offset: int
    partition_id: int
    partition: Partition
    timestamp: int | None

    @property
    def timestamp_dt(self) -> datetime.datetime | None:
        """The timestamp as a naive UTC datetime, as pykafka gives it."""
        if self.timestamp is None:
            return None
        return datetime.datetime.fromtimestamp(self.timestamp / 1000.0, datetime.UTC).replace(tzinfo=None)
