"""Everything that can make a connector act, as values on its one event queue.

Watches, embedded-member callbacks, session changes and application calls all become events; the
rebalance worker handles them one at a time, so no other code touches ownership.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from enum import Enum

from migrator.protocol.partition import TopicPartition


class Trigger(Enum):
    """Why the worker evaluates: what the rebalance gating (`coordination.gating`) branches on. The values
    are what the rebalance log line names."""

    START = "start"
    IDS = "ids"
    MIGRATION_IDS = "migration ids"
    MODE = "mode"
    TOPICS = "topics"
    """The topic list changed (watched for a wildcard subscription)."""
    TOPIC = "topic"
    """The partitions of a subscribed topic changed."""
    BROKERS = "brokers"
    """The registered brokers or a partition's leader changed (watched in the pykafka dialect: its partition
    order and owner node names follow the partition leaders; pykafka itself re-assigns on the brokers only)."""
    NEW_SESSION = "new session"
    RETRY = "retry"
    """A retry or re-check the worker scheduled for itself (`State.retry_at`)."""
    KAFKA_ASSIGNMENT = "kafka assignment"
    KAFKA_LOST = "kafka lost"
    FETCH = "fetch"
    """The owned partitions the fetcher cannot read changed: only republish (no rebalance)."""


@dataclass(frozen=True, slots=True)
class Changed:
    """Something a rebalance depends on changed (ids, migration ids, mode, topics); re-evaluate."""

    what: Trigger


@dataclass(frozen=True, slots=True)
class SessionLost:
    """The ZooKeeper session expired: our ephemeral nodes (registration, owners) are gone."""


@dataclass(frozen=True, slots=True)
class SessionRestored:
    """A new ZooKeeper session is connected: register again and rebalance."""


@dataclass(frozen=True, slots=True)
class KafkaAssigned:
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class KafkaRevoked:
    """The embedded member is losing its partitions; under kafka authority the worker must release before
    `done` resolves, because the member's rebalance callback waits on it (Kafka's rebalance barrier).

    `partitions` is what a cooperative rebalance revokes (the rest stays with the member, untouched); None
    under the eager protocol and for a loss, where everything goes."""

    done: Future[None] = field(default_factory=Future)
    lost: bool = False
    partitions: frozenset[TopicPartition] | None = None


@dataclass(frozen=True, slots=True)
class KafkaLost:
    """The embedded member lost Kafka coordination (an error callback: no broker reachable,
    GROUP_MAX_SIZE_REACHED, ..., or its poll loop failed); `reason` is published as the authority's reason.

    `connection`: only the connections were lost (no broker reachable). An assigned member keeps its
    generation through that, so it is no loss of coordination (see `KafkaGroupTracker.unavailable`)."""

    reason: str
    connection: bool = False


@dataclass(frozen=True, slots=True)
class CommitRequest:
    done: Future[None] = field(default_factory=Future)


@dataclass(frozen=True, slots=True)
class Shutdown:
    done: Future[None] = field(default_factory=Future)


Event = Changed | SessionLost | SessionRestored | KafkaAssigned | KafkaRevoked | KafkaLost | CommitRequest | Shutdown
