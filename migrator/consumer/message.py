"""What a stream yields."""

from __future__ import annotations

from dataclasses import dataclass

from migrator.assign.model import TopicPartition


@dataclass(frozen=True, slots=True)
class Message:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    thread_id: str = ""

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)
