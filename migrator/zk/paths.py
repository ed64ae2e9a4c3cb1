"""Every znode path of the legacy consumer layout (CONTRACT §1) and of the migration extension.

One place builds paths so that a typo cannot create a second layout.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from migrator.protocol.dialect import OwnerNaming, ScalaNaming
from migrator.protocol.partition import TopicPartition

CONSUMERS = "/consumers"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
FLEET_LOCK = "/migrator/fleet-scan/lock"
FLEET_PLANS = "/migrator/fleet-scan/plans"


def broker_topic(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def broker_topic_partitions(topic: str) -> str:
    """The folder of a topic's `<partition>/state` nodes (leader and ISR, written by the controller)."""
    return f"{broker_topic(topic)}/partitions"


def partition_state(topic: str, partition: int | str) -> str:
    return f"{broker_topic_partitions(topic)}/{partition}/state"


@dataclass(frozen=True, slots=True)
class GroupPaths:
    """Paths of one consumer group.

    `authority` and `audit` are this project's additions (docs/architecture.md): each bridge publishes the
    authority it obeys at `authority/<consumerId>`, and set-mode appends its audit trail under `audit`.
    Neither touches a node a legacy connector reads.
    """

    group: str
    naming: OwnerNaming = field(default_factory=ScalaNaming, compare=False)
    """How this member's dialect names and fills owner nodes (Scala's by default)."""

    @property
    def root(self) -> str:
        return f"{CONSUMERS}/{self.group}"

    @property
    def ids(self) -> str:
        return f"{self.root}/ids"

    def member(self, consumer_id: str) -> str:
        return f"{self.ids}/{consumer_id}"

    @property
    def owners(self) -> str:
        return f"{self.root}/owners"

    def owners_topic(self, topic: str) -> str:
        return f"{self.owners}/{self.naming.folder(topic)}"

    def owner(self, topic: str, partition: int) -> str:
        return f"{self.owners_topic(topic)}/{self.naming.node(topic, partition)}"

    def released(self, tps: Iterable[TopicPartition]) -> None:
        """The owner nodes a claim of `tps` waited for are gone: a dialect that names nodes after facts that
        change (pykafka: the leader) names the ones it creates next afresh."""
        for tp in tps:
            self.naming.released(tp.topic, [tp.partition])

    def encode_owner(self, thread: str) -> bytes:
        return self.naming.encode(thread)

    def decode_owner(self, data: bytes | None) -> str:
        return self.naming.decode(data or b"")

    @property
    def offsets(self) -> str:
        return f"{self.root}/offsets"

    def offsets_topic(self, topic: str) -> str:
        return f"{self.offsets}/{topic}"

    def offset(self, topic: str, partition: int) -> str:
        return f"{self.offsets}/{topic}/{partition}"

    @property
    def migration(self) -> str:
        return f"{self.root}/migration"

    @property
    def migration_ids(self) -> str:
        return f"{self.migration}/ids"

    def migration_member(self, consumer_id: str) -> str:
        return f"{self.migration_ids}/{consumer_id}"

    @property
    def mode(self) -> str:
        return f"{self.migration}/mode"

    @property
    def authority(self) -> str:
        return f"{self.migration}/authority"

    def published_authority(self, consumer_id: str) -> str:
        return f"{self.authority}/{consumer_id}"

    @property
    def audit(self) -> str:
        return f"{self.migration}/audit"
