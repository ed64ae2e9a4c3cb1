"""`migrator groups`: every consumer group with a one-line state, from ZooKeeper (and Kafka with -b).

Reads only: the ZooKeeper layout of each group under /consumers and, when brokers are given, the Kafka
groups' descriptions. No Spark, no Java: this is the quick look before `status` on one group.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from migrator.errors import NotFound
from migrator.protocol.cutover import CutoverState, cutover_state
from migrator.protocol.group import Group
from migrator.protocol.group_view import GroupView
from migrator.protocol.kafka import KafkaGroup
from migrator.protocol.partition import TopicPartition
from migrator.zk.paths import CONSUMERS
from migrator.zk.session import ZkSession, chroot, exists


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
    CUT_OVER = "cut-over"
    """Cut over by `migrator cutover` (fenced, nobody in ZooKeeper, mode kafka); `cutover` says whether its Kafka
    consumers have joined."""
    FENCED = "fenced"
    """The cutover fence is up but the group is not cut over: a cutover or its rollback stopped part-way."""


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
    cutover: str | None = None
    """A fenced group's `protocol.cutover.CutoverState` value; None when not fenced."""

    def to_dict(self) -> dict[str, object]:
        return {
            "group": self.group, "state": self.state.value, "mode": self.mode, "legacy": self.legacy,
            "bridges": self.bridges, "kafka_state": self.kafka_state, "kafka_members": self.kafka_members,
            "in_zookeeper": self.in_zookeeper, "cutover": self.cutover,
        }  # fmt: skip


def mode_text(view: GroupView) -> str:
    if not view.exists or not view.mode.exists:
        return "absent"
    return view.mode.mode.value if view.mode.mode is not None else "unknown"


def group_row(
    view: GroupView,
    kafka: KafkaGroup | None,
    owner_nodes: int = 0,
    committed: Mapping[TopicPartition, int] | None = None,
) -> GroupRow:
    """Pure: the row of one group; `view.exists` False for a group only Kafka knows. The counts are the read
    model's facts (`Group.legacy_members`, `Group.registered_bridges`), so `groups`, `status` and the fleet scan
    agree on who is a bridge; `owner_nodes` (every dialect's), the view's fence and Kafka's `committed` offsets
    say where a fenced group's cutover stands."""
    group = Group(view, kafka, kafka_committed=committed or {})
    legacy, bridges = len(group.legacy_members), len(group.registered_bridges)
    kafka_members = len(group.kafka.members) if group.kafka is not None else None
    kafka_state = group.kafka.state.name if group.kafka is not None else None
    cutover = cutover_state(group, owner_nodes)
    state = _CUTOVER_STATE[cutover] if cutover is not None else _state(legacy, bridges, kafka_members)
    word = cutover.value if cutover is not None else None
    return GroupRow(view.group, state, mode_text(view), legacy, bridges, kafka_state, kafka_members, view.exists, word)


_CUTOVER_STATE = {
    CutoverState.UNDER_WAY: GroupState.FENCED,
    CutoverState.WAITING: GroupState.CUT_OVER,
    CutoverState.STARTED: GroupState.CUT_OVER,
    CutoverState.KAFKA_UNCHECKED: GroupState.CUT_OVER,
}


def require_exists(zk: ZkSession, view: GroupView) -> GroupView:
    """`view`, or NotFound (exit 3) for a group that does not exist: a typo or the wrong cluster, said instead of
    `absent`. Existence comes with the read; only a missing group costs one more read (is `/consumers` there?)."""
    if view.exists:
        return view
    where = f" (chroot {chroot(zk)})" if chroot(zk) else ""
    if not exists(zk, CONSUMERS):
        raise NotFound(f"{CONSUMERS} does not exist{where}: no consumer group is registered on this ZooKeeper")
    raise NotFound(f"group {view.group} does not exist under {CONSUMERS}{where}")


def _state(legacy: int, bridges: int, kafka_members: int | None) -> GroupState:
    if legacy and bridges:
        return GroupState.MIXED
    if legacy:
        return GroupState.LEGACY
    if bridges:
        return GroupState.BRIDGING
    return GroupState.KAFKA if kafka_members else GroupState.INACTIVE
