"""Thread-level view of a Kafka-coordinated assignment, CONTRACT §5 ("Kafka authority, thread level").

Kafka assigns partitions to members; the legacy listener API reports them per thread. As KIP-125 proposes,
a bridge splits its own partitions among its threads with the Java client's
`org.apache.kafka.clients.consumer.RoundRobinAssignor` (0.10 to 2.x semantics: members sorted by member
id), so every bridge derives the same thread view of the whole group. Pure functions only.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from migrator.assign.javahash import java_string_sort_key
from migrator.assign.model import ThreadId, thread_ids
from migrator.protocol.partition import TopicPartition


def java_roundrobin(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Collection[str]]
) -> dict[str, list[TopicPartition]]:
    """`RoundRobinAssignor.assign`: member -> partitions, in the order the Java assignor appends them.

    Partitions are every subscribed topic's 0..n-1, topics in Java string order (a topic missing from
    `partitions_per_topic` is skipped); they are dealt over the members in Java string order, a member not
    subscribed to the partition's topic being passed over (and losing its turn).
    """
    assignment: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
    members = sorted(subscriptions, key=java_string_sort_key)
    topics_of = {m: frozenset(ts) for m, ts in subscriptions.items()}
    topics = sorted({t for ts in topics_of.values() for t in ts}, key=java_string_sort_key)
    pos = 0
    for topic in topics:
        for p in range(partitions_per_topic.get(topic, 0)):
            # Terminates: the topic came from some member's subscription.
            while topic not in topics_of[members[pos]]:
                pos = (pos + 1) % len(members)
            assignment[members[pos]].append(TopicPartition(topic, p))
            pos = (pos + 1) % len(members)
    return assignment


def subdivide(
    consumer_id: str, streams_per_topic: Mapping[str, int], assigned: Collection[TopicPartition]
) -> dict[TopicPartition, ThreadId]:
    """Split one bridge's Kafka-assigned partitions among its threads.

    Thread `<cid>-i` subscribes to every topic with more than i streams (as in the `ids` node; wildcards
    must be expanded by the caller). The Java round-robin runs on "relative" partitions 0..k-1 per topic,
    k = partitions of that topic assigned to the bridge, and relative r means the r-th smallest of them.
    Assigned partitions of topics the bridge has no streams for have no thread to go to and are left out
    of the result; callers that care can compare the result's keys with `assigned`.
    """
    by_topic: dict[str, list[int]] = {}
    for tp in set(assigned):
        if streams_per_topic.get(tp.topic, 0) > 0:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
    for parts in by_topic.values():
        parts.sort()

    max_streams = max(streams_per_topic.values(), default=0)
    thread_topics = {
        thread: [t for t, n in streams_per_topic.items() if n > i]
        for i, thread in enumerate(thread_ids(consumer_id, max_streams))
    }
    relative = java_roundrobin({t: len(ps) for t, ps in by_topic.items()}, thread_topics)
    return {
        TopicPartition(rel.topic, by_topic[rel.topic][rel.partition]): thread
        for thread, rels in relative.items()
        for rel in rels
    }


def global_thread_assignment(
    members: Mapping[str, Collection[TopicPartition]], bridges: Mapping[str, Mapping[str, int]]
) -> dict[TopicPartition, ThreadId]:
    """The whole group's Kafka assignment at thread granularity, for `before_starting_fetchers`.

    `members` is keyed by the bridge consumerId (its embedded member's client.id) for bridges and by the
    memberId for plain Kafka consumers; `bridges` holds each bridge's streams per topic. Bridges are
    subdivided, plain consumers become the single thread `<memberId>-0`. Overlapping member assignments
    are rejected rather than resolved: they would mean two owners for one partition.
    """
    result: dict[TopicPartition, ThreadId] = {}
    for member, parts in members.items():
        if member in bridges:
            threads = subdivide(member, bridges[member], parts)
        else:
            threads = {tp: f"{member}-0" for tp in parts}
        for tp, thread in threads.items():
            if tp in result:
                raise ValueError(f"partition {tp} assigned to both {result[tp]} and {thread}")
            result[tp] = thread
    return result
