"""The immutable values assignors work on."""

from __future__ import annotations

from collections.abc import Mapping

from migrator.protocol.partition import TopicPartition

ThreadId = str
"""`<consumerId>-<i>`; plain Kafka consumers appear as `<memberId>-0`."""


GlobalAssignment = Mapping[TopicPartition, ThreadId]
"""Every partition of the group's topics mapped to the one thread that owns it."""


def thread_ids(consumer_id: str, streams: int) -> list[ThreadId]:
    """The thread ids of one member for one topic: `<consumerId>-0 … -<streams-1>`."""
    return [f"{consumer_id}-{i}" for i in range(streams)]


def consumer_of_thread(thread_id: ThreadId) -> str:
    """The consumerId of a thread id (everything before the last `-`)."""
    return thread_id.rsplit("-", 1)[0]
