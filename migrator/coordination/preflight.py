"""Whether switching a group's mode is safe right now: a pure decision over what was read.

A switch to `kafka` only takes effect if every bridge can obey Kafka's assignment (CONTRACT §5): a legacy
connector, a bridge whose embedded member is not in the Kafka group, or a group the brokers cap with
`group.max.size` would leave some bridges on ZooKeeper while others move. The switch would then look done
to the operator while the group quietly stays (or flaps) on ZooKeeper. A switch to `zookeeper` is unsafe
while plain Kafka consumers are in the group: they keep their Kafka partitions while the bridges claim
ZooKeeper's, which is dual ownership (CONTRACT §6.1). A switch either way that cannot see the Kafka group
is refused too: the check it would skip is the one that prevents dual ownership.

No I/O here: `migrator.ops.modes` reads the inputs and writes the mode.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from migrator.protocol.codecs import Mode
from migrator.protocol.group import Group
from migrator.protocol.group_view import GroupView
from migrator.protocol.kafka import KafkaAcl, KafkaGroup, rebalance_protocol

SHAREABLE_ASSIGNORS = frozenset({"range", "roundrobin", "cooperative-sticky"})
"""Kafka assignors a bridge's embedded member can offer (and so share with plain Kafka consumers)."""
SETTLE_HINT_S = 10
"""How long an operator is told to wait for a rebalancing group: members rejoin within a few heartbeats
(the bridges' embedded members poll every second), so a group settles in seconds unless a member is gone,
when the broker waits for its session timeout (10 s by default)."""


@dataclass(frozen=True, slots=True)
class SwitchCheck:
    """Whether a mode switch is safe now: `refusals` block it unless forced; `warnings` are shown but do not block."""

    target: Mode
    refusals: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    settling: bool = False
    """The Kafka group is rebalancing (no assignor chosen yet): a refusal that goes away by itself."""

    @property
    def ok(self) -> bool:
        return not self.refusals


def _names(ids: Iterable[str], limit: int = 5) -> str:
    ids = sorted(ids)
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _unchecked(kafka_error: str | KafkaAcl | None, purpose: str = "") -> str:
    """Why the Kafka group could not be read: a missing ACL is named so that the operator can grant it."""
    if isinstance(kafka_error, KafkaAcl):
        return (
            f"the Kafka group cannot be read{purpose}: Kafka denies {kafka_error} to this tool's principal; "
            "grant that ACL (docs/operations.md, Kafka ACLs)"
        )
    return f"the Kafka group cannot be checked{purpose}: {kafka_error or 'no --bootstrap-servers given'}"


def _to_kafka(
    view: GroupView, kafka: KafkaGroup | None, group_max_size: int | None, kafka_error: str | KafkaAcl | None
) -> list[str]:
    reasons: list[str] = []
    if view.corrupt_members:
        problems = "; ".join(f"{c.consumer_id}: {c.problem}" for c in view.corrupt_members[:3])
        reasons.append(f"{len(view.corrupt_members)} ids node(s) do not decode ({problems})")
    if not view.bridges:
        reasons.append("no bridge connectors are registered (nothing under migration/ids is also in ids)")
    if view.legacy:
        legacy = _names(f"{m.consumer_id} ({m.dialect.value})" for m in view.legacy)
        reasons.append(f"legacy connector(s) registered (in ids, not in migration/ids): {legacy}")
    if kafka is None:
        reasons.append(_unchecked(kafka_error))
        return reasons
    group = Group(view, kafka)
    disagree = group.protocol_disagreement
    if disagree:
        reasons.append(_disagreement(kafka, disagree))
    if group.bridges_joining_kafka - disagree:
        missing = _names(group.bridges_joining_kafka - disagree)
        reasons.append(f"bridge(s) whose embedded member is not in the Kafka group: {missing}")
    size = group.kafka_members_needed
    if group_max_size is not None and size > group_max_size:
        reasons.append(f"the group needs {size} Kafka members but the brokers' group.max.size is {group_max_size}")
    if not kafka.is_empty:
        if not kafka.assignor:
            reasons.append(
                f"the Kafka group has no chosen assignor yet (state {kafka.state.name}): it is rebalancing; retry in "
                f"about {SETTLE_HINT_S}s, or add --wait to wait for it to settle"
            )
        elif kafka.assignor not in SHAREABLE_ASSIGNORS:
            reasons.append(
                f"the Kafka group uses assignor {kafka.assignor!r}; bridges can only share "
                + " or ".join(sorted(SHAREABLE_ASSIGNORS))
            )
    return reasons


def _disagreement(kafka: KafkaGroup, bridges: frozenset[str]) -> str:
    chosen = rebalance_protocol(kafka.assignor).value
    return (
        f"members disagree on the rebalance protocol: the Kafka group's members use {kafka.assignor!r} "
        f"({chosen}) and bridge(s) {_names(bridges)} run the other protocol, so the broker refuses them; give "
        "the group a common assignor (docs/runbook.md, step 3)"
    )


def _to_zookeeper(
    view: GroupView, kafka: KafkaGroup | None, kafka_error: str | KafkaAcl | None
) -> tuple[list[str], list[str]]:
    if kafka is None:
        return [_unchecked(kafka_error, " for plain Kafka consumers (dual ownership)")], []
    plain = Group(view, kafka).plain_consumers
    if not plain:
        return [], []
    who = _names(f"{m.client_id} ({m.member_id})" for m in plain)
    return [
        f"{len(plain)} plain Kafka consumer(s) are in the group: {who}; they would keep their Kafka partitions "
        "while the bridges take ZooKeeper's (dual ownership)"
    ], []


def preflight(
    target: Mode,
    view: GroupView,
    kafka: KafkaGroup | None,
    group_max_size: int | None = None,
    *,
    kafka_error: str | KafkaAcl | None = None,
) -> SwitchCheck:
    """Why switching `view.group` to `target` is unsafe now (empty refusals: safe).

    `kafka` is None when the Kafka group could not be described; `kafka_error` then says why (the missing
    ACL when Kafka refused for want of one).
    """
    warnings: list[str] = []
    refusals: list[str] = []
    if not view.exists:
        refusals.append(f"group {view.group} does not exist in ZooKeeper (no /consumers/{view.group})")
    if view.mode.is_unknown:
        warnings.append(f"the mode node holds the unknown value {view.mode.raw!r}; it will be replaced")
    if target is Mode.KAFKA:
        refusals.extend(_to_kafka(view, kafka, group_max_size, kafka_error))
    else:
        more_refusals, more_warnings = _to_zookeeper(view, kafka, kafka_error)
        refusals.extend(more_refusals)
        warnings.extend(more_warnings)
    settling = target is Mode.KAFKA and kafka is not None and not kafka.is_empty and not kafka.assignor
    return SwitchCheck(target=target, refusals=tuple(refusals), warnings=tuple(warnings), settling=settling)
