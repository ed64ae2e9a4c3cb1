"""A Kafka consumer group as the brokers describe it (DescribeGroups), without any client library's types."""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

from migrator.protocol.partition import TopicPartition


@dataclass(frozen=True, slots=True)
class KafkaMember:
    member_id: str
    client_id: str
    host: str
    group_instance_id: str | None
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class KafkaGroup:
    """What DescribeGroups says about a group. `state` is the broker's word, e.g. STABLE, EMPTY, DEAD."""

    group_id: str
    state: str
    assignor: str
    members: tuple[KafkaMember, ...]

    @property
    def client_ids(self) -> frozenset[str]:
        return frozenset(m.client_id for m in self.members)

    @property
    def is_empty(self) -> bool:
        return not self.members

    def plain(self, bridges: Set[str]) -> tuple[KafkaMember, ...]:
        """The plain Kafka consumers: members that are no bridge's embedded member, which joins with its
        bridge's consumerId as client.id. `bridges` are the consumerIds that count as bridges for the question
        asked. Plain consumers often share a client.id, so each member counts."""
        return tuple(m for m in self.members if m.client_id not in bridges)

    def assignment_by_client(self) -> dict[str, tuple[TopicPartition, ...]]:
        return {m.client_id: m.partitions for m in self.members}
