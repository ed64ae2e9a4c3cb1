"""What a stream yields. A NamedTuple: building one per record must cost next to nothing."""

from __future__ import annotations

from typing import NamedTuple

from migrator.assign.model import TopicPartition


class Message(NamedTuple):
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
