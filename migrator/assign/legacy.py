"""The legacy (ZooKeeper-authority) assignors, CONTRACT §2.

Bit-compatible with `kafka.consumer.RangeAssignor` / `RoundRobinAssignor` (Scala, Kafka 0.8.2 to 1.1) so a
group can mix our connectors with Scala ones and still agree on who owns what. Pure functions only.

Thread ids are ordered like Scala's `ConsumerThreadId.compare`, i.e. Java `String.compareTo` on the
`<consumerId>-<i>` text (`x-10` before `x-2`), which we get from `java_string_sort_key`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from migrator.assign.javahash import java_string_hashcode, java_string_sort_key
from migrator.assign.model import ThreadId, consumer_of_thread, thread_ids
from migrator.protocol.partition import TopicPartition


@dataclass(frozen=True)
class AssignmentContext:
    """Immutable snapshot of what every member reads from ZooKeeper before assigning."""

    consumer_id: str
    """The member computing; only `own_partitions` cares, the global result does not depend on it."""
    thread_ids_per_topic: Mapping[str, tuple[ThreadId, ...]]
    """topic -> thread ids of every member subscribed to it (sorted; re-sorted defensively)."""
    partitions_per_topic: Mapping[str, tuple[int, ...]]
    """topic -> partition ids (ascending; re-sorted defensively)."""


def _sorted_threads(threads: Sequence[ThreadId]) -> list[ThreadId]:
    return sorted(set(threads), key=java_string_sort_key)


def _assignable_topics(ctx: AssignmentContext) -> list[str]:
    """Topics with at least one subscribed thread and one known partition, in a fixed order."""
    return sorted(
        (t for t, threads in ctx.thread_ids_per_topic.items() if threads and ctx.partitions_per_topic.get(t)),
        key=java_string_sort_key,
    )


def range_assign(ctx: AssignmentContext) -> dict[TopicPartition, ThreadId]:
    """Per topic, contiguous runs of sorted partitions to sorted threads; the first `P % n` threads get one extra.

    Scala only computes the topics the *computing* member subscribes to; we compute every topic so all
    members produce the same global map (the entries for any member's own threads are identical).
    """
    result: dict[TopicPartition, ThreadId] = {}
    for topic in _assignable_topics(ctx):
        threads = _sorted_threads(ctx.thread_ids_per_topic[topic])
        partitions = sorted(set(ctx.partitions_per_topic[topic]))
        base, extra = divmod(len(partitions), len(threads))
        for i, thread in enumerate(threads):
            start = base * i + min(i, extra)
            for p in partitions[start : start + base + (1 if i < extra else 0)]:
                result[TopicPartition(topic, p)] = thread
    return result


def roundrobin_assign(ctx: AssignmentContext) -> dict[TopicPartition, ThreadId]:
    """All partitions of all topics, ordered by Java hashCode of `"[topic,partition]"`, dealt round-robin.

    The cycle runs over every distinct thread id (sorted); a pair goes to the next thread in the cycle that
    subscribes to its topic, and threads passed over lose their turn (Scala's `circularIterator.dropWhile`).
    Hash ties keep the pre-sort order, as Scala's stable `sortWith` does. Scala's pre-sort order is the
    iteration order of a hash map of topics, which is not reproducible; we use (topic, partition) ascending,
    topics in Java string order. Ties need two equal-length names with colliding hashes (e.g. `Aa`/`BB`).
    """
    subscribers = {t: frozenset(ths) for t, ths in ctx.thread_ids_per_topic.items()}
    cycle = _sorted_threads([th for ths in ctx.thread_ids_per_topic.values() for th in ths])
    pairs = [
        TopicPartition(topic, p)
        for topic in _assignable_topics(ctx)
        for p in sorted(set(ctx.partitions_per_topic[topic]))
    ]
    pairs.sort(key=lambda tp: java_string_hashcode(f"[{tp.topic},{tp.partition}]"))

    result: dict[TopicPartition, ThreadId] = {}
    pos = 0
    for tp in pairs:
        # Terminates: _assignable_topics only yields topics with at least one thread in the cycle.
        while cycle[pos] not in subscribers[tp.topic]:
            pos = (pos + 1) % len(cycle)
        result[tp] = cycle[pos]
        pos = (pos + 1) % len(cycle)
    return result


def own_partitions(assignment: Mapping[TopicPartition, ThreadId], consumer_id: str) -> dict[TopicPartition, ThreadId]:
    """The part of a global assignment this member claims in ZooKeeper: its own threads' partitions."""
    return {tp: th for tp, th in assignment.items() if consumer_of_thread(th) == consumer_id}


Assignor = Callable[[AssignmentContext], dict[TopicPartition, ThreadId]]

ASSIGNORS: dict[str, Assignor] = {"range": range_assign, "roundrobin": roundrobin_assign}
"""By `partition.assignment.strategy` value. Scala falls back to range for any unknown name."""


def assignor_for(strategy: str | Assignor) -> Assignor:
    """The assignor a `partition.assignment.strategy` value names, or `strategy` itself when a dialect supplies
    its own (e.g. pykafka's, `zk/pykafka_group.py`)."""
    if callable(strategy):
        return strategy
    return ASSIGNORS.get(strategy, ASSIGNORS["range"])


def context_from_subscriptions(
    consumer_id: str,
    subscriptions: Mapping[str, Mapping[str, int]],
    partitions: Mapping[str, Sequence[int]],
) -> AssignmentContext:
    """Build the snapshot from every member's `ids` subscription (consumerId -> topic -> streams).

    Subscriptions must already name concrete topics (wildcards expanded by the caller). Topics with no
    known partitions are skipped, like Scala, where they yield no assignment; so are topics nobody streams.
    """
    threads: dict[str, list[ThreadId]] = {}
    for cid, topic_counts in subscriptions.items():
        for topic, streams in topic_counts.items():
            if partitions.get(topic):
                threads.setdefault(topic, []).extend(thread_ids(cid, streams))
    return AssignmentContext(
        consumer_id=consumer_id,
        thread_ids_per_topic={t: tuple(_sorted_threads(ths)) for t, ths in threads.items() if ths},
        partitions_per_topic={t: tuple(sorted(set(partitions[t]))) for t, ths in threads.items() if ths},
    )
