"""A Kafka consumer group as the brokers describe it (DescribeGroups), without any client library's types."""

from __future__ import annotations

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

    def assignment_by_client(self) -> dict[str, tuple[TopicPartition, ...]]:
        return {m.client_id: m.partitions for m in self.members}
