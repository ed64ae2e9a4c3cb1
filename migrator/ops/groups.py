"""`migrator groups`: every consumer group with a one-line state, from ZooKeeper (and Kafka with -b).

Reads only: the ZooKeeper layout of each group under /consumers and, when brokers are given, the Kafka
groups' descriptions. No Spark, no Java: this is the quick look before `status` on one group.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from migrator.protocol.group import Group
from migrator.protocol.group_view import GroupView
from migrator.protocol.kafka import KafkaGroup


class GroupState(enum.Enum):
    """One word for where a group stands in a migration."""

    INACTIVE = "inactive"
    """No member registered in ZooKeeper and none in the Kafka group."""
    LEGACY = "legacy"
    """Only legacy connectors: not started."""
    MIXED = "mixed"
    """Legacy connectors and bridges: step 1 is under way (set-mode kafka would be refused)."""
    BRIDGING = "bridging"
    """Only bridges: ready to switch, or switched (see `mode`)."""
    KAFKA = "kafka"
    """No ZooKeeper member, but members in the Kafka group: plain Kafka consumers took over."""


@dataclass(frozen=True)
class GroupRow:
    group: str
    state: GroupState
    mode: str
    legacy: int
    bridges: int
    kafka_state: str | None
    kafka_members: int | None
    in_zookeeper: bool

    def to_dict(self) -> dict[str, object]:
        return {
            "group": self.group, "state": self.state.value, "mode": self.mode, "legacy": self.legacy,
            "bridges": self.bridges, "kafka_state": self.kafka_state, "kafka_members": self.kafka_members,
            "in_zookeeper": self.in_zookeeper,
        }  # fmt: skip


def mode_text(view: GroupView) -> str:
    if not view.exists or not view.mode.exists:
        return "absent"
    return view.mode.mode.value if view.mode.mode is not None else "unknown"


def group_row(view: GroupView, kafka: KafkaGroup | None) -> GroupRow:
    """Pure: the row of one group; `view.exists` False for a group only Kafka knows. The counts are the read
    model's facts (`Group.legacy_members`, `Group.registered_bridges`), so `groups`, `status` and the fleet scan
    agree on who is a bridge."""
    group = Group(view, kafka)
    legacy, bridges = len(group.legacy_members), len(group.registered_bridges)
    kafka_members = len(group.kafka.members) if group.kafka is not None else None
    kafka_state = group.kafka.state.name if group.kafka is not None else None
    state = _state(legacy, bridges, kafka_members)
    return GroupRow(view.group, state, mode_text(view), legacy, bridges, kafka_state, kafka_members, view.exists)


def _state(legacy: int, bridges: int, kafka_members: int | None) -> GroupState:
    if legacy and bridges:
        return GroupState.MIXED
    if legacy:
        return GroupState.LEGACY
    if bridges:
        return GroupState.BRIDGING
    return GroupState.KAFKA if kafka_members else GroupState.INACTIVE
