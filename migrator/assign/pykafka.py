"""pykafka 2.8.0's assignors (`pykafka.membershipprotocol` range and round-robin), quirks included.

A member that shares a group with pykafka `BalancedConsumer`s must compute exactly their assignment, or it
claims owner nodes a pykafka member also wants and that member gives up after `rebalance_max_retries`.

pykafka assigns one topic at a time, per consumer (no threads), over:
- the participants: the consumer ids registered for the topic, sorted (as bytes; for UTF-8 text the same
  order as Python's `str` order);
- the partitions, sorted by the TEXT `"<topic>-<leader>-<partition>"` where `<topic>` is the topic as
  `str()` prints pykafka's name (`b'orders'` on Python 3, see `Spelling`). The order is lexicographic:
  partition 10 comes before partition 2, and the partition's current leader broker id takes part.

Pure functions only.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence

from migrator.assign.model import ThreadId, consumer_of_thread
from migrator.protocol.partition import TopicPartition
from migrator.protocol.pykafka_layout import Spelling, topic_text


class PykafkaProtocol(enum.Enum):
    """pykafka's `membership_protocol`: `RangeProtocol` (its default) or `RoundRobinProtocol`."""

    RANGE = "range"
    ROUNDROBIN = "roundrobin"


def partition_order(topic: str, spelling: Spelling, leaders: Mapping[int, int]) -> list[int]:
    """The partitions (partition -> leader broker id) in pykafka's order."""
    prefix = topic_text(topic, spelling)
    return sorted(leaders, key=lambda p: f"{prefix}-{leaders[p]}-{p}")


def range_assign(
    topic: str, spelling: Spelling, consumers: Sequence[str], leaders: Mapping[int, int]
) -> dict[int, str]:
    """Contiguous runs of the ordered partitions to the sorted consumers; the first `P % n` get one extra."""
    participants = sorted(set(consumers))
    ordered = partition_order(topic, spelling, leaders)
    if not participants:
        return {}
    base, extra = divmod(len(ordered), len(participants))
    result: dict[int, str] = {}
    for i, consumer in enumerate(participants):
        start = base * i + min(i, extra)
        for p in ordered[start : start + base + (1 if i < extra else 0)]:
            result[p] = consumer
    return result


def roundrobin_assign(
    topic: str, spelling: Spelling, consumers: Sequence[str], leaders: Mapping[int, int]
) -> dict[int, str]:
    """The ordered partitions dealt to the sorted consumers in turn: the i-th goes to consumer `i % n`."""
    participants = sorted(set(consumers))
    if not participants:
        return {}
    ordered = partition_order(topic, spelling, leaders)
    return {p: participants[i % len(participants)] for i, p in enumerate(ordered)}


Assignor = Callable[[str, Spelling, Sequence[str], Mapping[int, int]], dict[int, str]]

ASSIGNORS: dict[PykafkaProtocol, Assignor] = {
    PykafkaProtocol.RANGE: range_assign,
    PykafkaProtocol.ROUNDROBIN: roundrobin_assign,
}


def own_partitions(assignment: Mapping[int, str], consumer_id: str) -> set[int]:
    return {p for p, owner in assignment.items() if owner == consumer_id}


def assign_threads(
    protocol: PykafkaProtocol,
    spelling: Spelling,
    thread_ids_per_topic: Mapping[str, Sequence[ThreadId]],
    leaders_per_topic: Mapping[str, Mapping[int, int]],
) -> dict[TopicPartition, ThreadId]:
    """The group's assignment in the legacy assignors' terms: every pykafka member is one thread
    (`<consumer id>-0`), each topic assigned on its own over the members registered for it."""
    result: dict[TopicPartition, ThreadId] = {}
    for topic, threads in sorted(thread_ids_per_topic.items()):
        leaders = leaders_per_topic.get(topic, {})
        consumers = [consumer_of_thread(th) for th in threads]
        for partition, consumer in ASSIGNORS[protocol](topic, spelling, consumers, leaders).items():
            result[TopicPartition(topic, partition)] = f"{consumer}-0"
    return result
