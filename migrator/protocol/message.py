"""What a stream yields, and the chunks records travel in from the fetcher to a stream.

A `Message` is a NamedTuple: building one per record must cost next to nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from migrator.protocol.partition import TopicPartition


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


@dataclass(slots=True)
class Chunk:
    """Consecutive records of one partition, fetched while it was open at `epoch`."""

    tp: TopicPartition
    epoch: int
    messages: list[Message]
