"""A Kafka consumer group as the brokers describe it (DescribeGroups), without any client library's types."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from migrator.protocol.partition import TopicPartition


class KafkaGroupState(Enum):
    """A Kafka consumer group's state, as the group coordinator reports it."""

    UNKNOWN = "Unknown"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"
    EMPTY = "Empty"

    @classmethod
    def from_name(cls, name: str) -> KafkaGroupState:
        """The state named by the broker ("PreparingRebalance") or by confluent-kafka's `ConsumerGroupState`
        ("PREPARING_REBALANCING"); UNKNOWN for any other word."""
        return _STATE_NAMES.get(name.replace("_", "").upper(), cls.UNKNOWN)

    @property
    def rebalancing(self) -> bool:
        """Between generations: the members are joining or waiting for their assignment."""
        return self in (KafkaGroupState.PREPARING_REBALANCE, KafkaGroupState.COMPLETING_REBALANCE)


_STATE_NAMES = {s.value.upper(): s for s in KafkaGroupState} | {
    "PREPARINGREBALANCING": KafkaGroupState.PREPARING_REBALANCE,
    "COMPLETINGREBALANCING": KafkaGroupState.COMPLETING_REBALANCE,
}


class RebalanceProtocol(Enum):
    """How a Kafka group's members hand partitions over in a rebalance."""

    EAGER = "eager"
    """Every member revokes everything before any is assigned anew (range, roundrobin, sticky)."""
    COOPERATIVE = "cooperative"
    """Incremental (KIP-429): only the partitions that move are revoked, the others keep flowing."""


COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky"})


def rebalance_protocol(assignors: str) -> RebalanceProtocol:
    """The protocol a member offering `assignors` (a `partition.assignment.strategy` list, or one chosen
    assignor) runs: cooperative only when every one of them is, as Kafka's clients decide."""
    names = {a.strip() for a in assignors.split(",") if a.strip()}
    return RebalanceProtocol.COOPERATIVE if names and names <= COOPERATIVE_ASSIGNORS else RebalanceProtocol.EAGER


@dataclass(frozen=True, slots=True)
class KafkaMember:
    member_id: str
    client_id: str
    host: str
    group_instance_id: str | None
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class KafkaGroup:
    """What DescribeGroups says about a group."""

    group_id: str
    state: KafkaGroupState
    assignor: str
    members: tuple[KafkaMember, ...]

    @property
    def client_ids(self) -> frozenset[str]:
        return frozenset(m.client_id for m in self.members)

    @property
    def is_empty(self) -> bool:
        return not self.members

    @property
    def stable(self) -> bool:
        return self.state is KafkaGroupState.STABLE

    def assignment_by_client(self) -> dict[str, tuple[TopicPartition, ...]]:
        return {m.client_id: m.partitions for m in self.members}


@dataclass(frozen=True, slots=True)
class KafkaAcl:
    """One Kafka ACL a request needs: `operation` (e.g. Describe) on a resource (`resource_type`, e.g. Group,
    and its name). Shown as `kafka-acls` spells it, so an operator can grant it."""

    operation: str
    resource_type: str
    resource_name: str

    def __str__(self) -> str:
        return f"{self.operation} on {self.resource_type}:{self.resource_name}"
