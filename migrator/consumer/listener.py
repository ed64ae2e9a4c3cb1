"""The rebalance listener of the legacy connector API (`set_rebalance_listener`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from migrator.assign.model import ThreadId
from migrator.protocol.partition import TopicPartition


class ConsumerRebalanceListener:
    """Override either hook; both run on the connector's rebalance worker thread."""

    def before_releasing_partitions(self, ownership: Mapping[str, set[int]]) -> None:
        """Called while ownership is still held, after the last commit of these partitions."""

    def before_starting_fetchers(self, consumer_id: str, assignment: Mapping[str, Mapping[int, ThreadId]]) -> None:
        """Called after claiming, before fetching: the global thread-level assignment of the group."""


def by_topic(partitions: Mapping[TopicPartition, ThreadId]) -> dict[str, dict[int, ThreadId]]:
    out: dict[str, dict[int, ThreadId]] = defaultdict(dict)
    for (topic, partition), thread in sorted(partitions.items()):
        out[topic][partition] = thread
    return dict(out)


def ownership_by_topic(partitions: Mapping[TopicPartition, ThreadId]) -> dict[str, set[int]]:
    out: dict[str, set[int]] = defaultdict(set)
    for topic, partition in partitions:
        out[topic].add(partition)
    return dict(out)
