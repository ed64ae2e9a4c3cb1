"""Whether a member can fetch the partitions it owns: the values a bridge publishes (`PublishedAuthority`) and
`status` judges. Pure."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from migrator.protocol.partition import TopicPartition


class FetchHealth(enum.Enum):
    OK = "ok"
    DENIED = "denied"
    """Kafka refused for want of an ACL or a valid identity (topic Read, SASL, TLS)."""
    UNREACHABLE = "unreachable"
    """No broker (or no partition leader) answered."""
    FAILING = "failing"
    """Any other error the fetch keeps returning."""


@dataclass(frozen=True, slots=True)
class FetchState:
    """The worst health among the owned partitions that keep failing, and which they are."""

    health: FetchHealth = FetchHealth.OK
    partitions: tuple[TopicPartition, ...] = ()

    def describe(self, shown: int = 10) -> str:
        names = ", ".join(str(tp) for tp in self.partitions[:shown])
        more = f" and {len(self.partitions) - shown} more" if len(self.partitions) > shown else ""
        return f"{self.health.value}: {len(self.partitions)} owned partition(s) cannot be fetched: {names}{more}"
