"""The values the fleet scan passes around: statuses, Kafka facts of a group, and the one row per group.

Rows are flat (strings, numbers, a list of reasons) so that Spark, JSON, CSV and Parquet carry them
without a custom encoder; the Spark schema lives in `pipeline.py` so this module never imports pyspark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from migrator.protocol.codecs import ModeNode
from migrator.protocol.kafka import KafkaGroup
from migrator.protocol.partition import TopicPartition


class Status(StrEnum):
    """Where a group stands on the way from ZooKeeper to Kafka coordination (docs/fleet.md)."""

    LEGACY = "LEGACY"  # only legacy connectors: nothing migrated yet
    MIGRATING = "MIGRATING"  # some bridges, some legacy connectors
    READY = "READY"  # all bridges, stable, Kafka-healthy: may be switched to kafka
    KAFKA = "KAFKA"  # mode kafka and converged
    CUT_OVER = "CUT_OVER"  # legacy members stopped behind a fence, mode kafka recorded by `cutover`
    MIXED_KAFKA_CONSUMERS = "MIXED_KAFKA_CONSUMERS"  # plain Kafka consumers beside bridges/legacy members
    BLOCKED = "BLOCKED"  # all bridges (or switched) but something forbids or contradicts kafka
    ORPHANED = "ORPHANED"  # no members at all
    ABANDONED = "ABANDONED"  # no member, no live Kafka group, no offset commit for --abandoned-after
    INCONSISTENT = "INCONSISTENT"  # ZooKeeper contradicts itself (owners of no member)


STATUS_ORDER: tuple[Status, ...] = tuple(Status)


@dataclass(frozen=True, slots=True)
class Classification:
    status: Status
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class KafkaGroupFacts:
    """What the brokers say about one group, read in the same pass as its znodes.

    `group` is None when DescribeGroups did not answer for it; `error` then says why. `partitions` maps
    each topic of interest to its partition ids (absent when the topic does not exist).
    """

    group: KafkaGroup | None
    committed: Mapping[TopicPartition, int] = field(default_factory=dict)
    log_end: Mapping[TopicPartition, int] = field(default_factory=dict)
    partitions: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    error: str | None = None

    def __post_init__(self) -> None:
        for name in ("committed", "log_end", "partitions"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))


@dataclass(frozen=True, slots=True)
class FleetRow:
    """One group of the fleet as the scan saw it. Times are epoch milliseconds."""

    ensemble: str
    group: str
    status: str
    reasons: list[str]
    members: int = 0
    bridges: int = 0
    legacy: int = 0
    corrupt_members: int = 0
    dialect: str | None = None  # scala | pykafka; unreadable | mixed when refused; None for an empty group
    route: str | None = None  # set-mode | cutover | blocked: its members' way to Kafka; None without members
    mode: str | None = None  # raw value of migration/mode; None when absent
    mode_mtime_ms: int | None = None
    stable_since_ms: int | None = None
    authority_kafka: int = 0  # bridges that publish authority kafka
    kafka_state: str | None = None
    kafka_members: int = 0
    kafka_plain_consumers: int = 0
    partitions: int = 0  # partitions of the group's static topics
    owned: int = 0  # of those, with an owners node
    lag: int | None = None  # sum over partitions of log end - max(ZooKeeper, Kafka) offset
    scanned_at_ms: int = 0

    @property
    def state(self) -> Status:
        """`status` as the enum (the row keeps its text, as Spark and the report files carry it)."""
        return Status(self.status)

    @property
    def mode_node(self) -> ModeNode:
        """`mode` as the mode node it was read from (absent, a known mode, or an unknown value)."""
        return ModeNode(self.mode is not None, self.mode)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FleetRow:
        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in known}
        values["reasons"] = list(values.get("reasons") or [])
        return cls(**values)


ROW_FIELDS: tuple[str, ...] = tuple(FleetRow.__dataclass_fields__)
