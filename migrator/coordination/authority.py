"""The authority rule of CONTRACT §5, a pure function.

`kafka` only if the mode node holds exactly `kafka`, every registered member is a bridge, and Kafka
coordination is healthy: this bridge's embedded member is in the group's current generation and so is
every other bridge's (a bridge missing from the Kafka group, e.g. refused with GROUP_MAX_SIZE_REACHED,
would otherwise obey ZooKeeper while the rest obey Kafka). Anything else means `zookeeper`.

`guard_fallback` narrows that fallback (CONTRACT §6.1): while the mode is `kafka`, the Kafka group may hold
plain Kafka consumers, which are not registered in ZooKeeper, so ZooKeeper's assignment would hand this
bridge partitions they are processing. Then the bridge holds nothing until Kafka authority is healthy again
or no plain member remains.
"""

from __future__ import annotations

import logging
from collections.abc import Set
from dataclasses import dataclass, replace
from enum import Enum

from migrator.protocol.codecs import Authority, Mode, ModeNode
from migrator.protocol.group import outside_zookeeper
from migrator.protocol.kafka import KafkaGroup


@dataclass(frozen=True, slots=True)
class KafkaHealth:
    """`unanswered`: Kafka did not answer DescribeGroups, so the answer may change with no event reaching
    the bridge (its own member stays assigned); the decision is then re-checked on the clock."""

    joined: bool
    reason: str = ""
    missing_bridges: frozenset[str] = frozenset()
    unanswered: bool = False

    @property
    def healthy(self) -> bool:
        return self.joined and not self.missing_bridges


UNKNOWN_KAFKA = KafkaHealth(joined=False, reason="embedded member has not joined the Kafka group")


class HoldKind(Enum):
    """Why the guard keeps a bridge empty: the worker branches on this, never on the reason's text."""

    REBALANCE = "rebalance"
    """Only because a Kafka rebalance is in progress (every Kafka join or leave goes through one): transient,
    it normally ends within the rebalance, so the worker logs it quietly unless it lasts."""
    PLAIN = "plain"
    """The guard proper: the group has, may have, or last had plain Kafka consumers."""


@dataclass(frozen=True, slots=True)
class AuthorityDecision:
    """`hold` (None when not held): the rule said `zookeeper` but the guard forbids obeying it, and why; the
    bridge owns nothing."""

    authority: Authority
    reason: str
    unknown_mode_value: str | None = None
    hold: HoldKind | None = None
    recheck: bool = False
    """Decided on an unanswered DescribeGroups: nothing will tell the bridge when Kafka answers again, so
    the worker evaluates again after a while (else a bridge could obey ZooKeeper for good while the others
    obey Kafka, and partitions between the two assignments would have no owner)."""

    @property
    def held(self) -> bool:
        return self.hold is not None


def decide_authority(mode: ModeNode, members: Set[str], bridges: Set[str], kafka: KafkaHealth) -> AuthorityDecision:
    if not mode.exists:
        return AuthorityDecision(Authority.ZOOKEEPER, "no mode node")
    if mode.is_unknown:
        return AuthorityDecision(Authority.ZOOKEEPER, f"unknown mode value {mode.raw!r}", mode.raw)
    if mode.mode is Mode.ZOOKEEPER:
        return AuthorityDecision(Authority.ZOOKEEPER, "mode is zookeeper")
    legacy = legacy_connectors(members, bridges)
    if legacy:
        return AuthorityDecision(Authority.ZOOKEEPER, f"legacy connector registered: {legacy[0]}")
    if not kafka.joined:
        return AuthorityDecision(
            Authority.ZOOKEEPER, f"Kafka coordination unavailable: {kafka.reason}", recheck=kafka.unanswered
        )
    if kafka.missing_bridges:
        missing = sorted(kafka.missing_bridges)[0]
        return AuthorityDecision(Authority.ZOOKEEPER, f"bridge {missing} is not in the Kafka group")
    return AuthorityDecision(Authority.KAFKA, "mode is kafka and every member is a bridge in the Kafka group")


def legacy_connectors(members: Set[str], bridges: Set[str]) -> list[str]:
    """Registered members that are no bridge, sorted: whatever dialect they speak, they follow ZooKeeper."""
    return sorted(set(members) - set(bridges))


def in_kafka_group(members: Set[str], bridges: Set[str], *, beside_legacy: bool) -> bool:
    """Whether a bridge's embedded member belongs in the Kafka group now.

    `beside_legacy` False is for a dialect whose legacy members commit offsets to Kafka themselves, without a
    generation (pykafka's `BalancedConsumer`): the broker refuses such a commit while the group has live
    members (UNKNOWN_MEMBER_ID), so while one of them is registered the bridges stay out of the Kafka group,
    or its progress would never be stored. They obey ZooKeeper then anyway."""
    return beside_legacy or not legacy_connectors(members, bridges)


def needs_group_check(mode: ModeNode, members: Set[str], bridges: Set[str]) -> bool:
    """Whether the Kafka group must be described at all (only when every other condition says kafka)."""
    return mode.mode is Mode.KAFKA and set(members) <= set(bridges)


def presumably_whole(last: KafkaGroup | None, registered_bridges: Set[str], consumer_id: str) -> bool:
    """Whether a bridge obeying Kafka may claim a new assignment before this rebalance's DescribeGroups answers,
    on the word of the last description (`last`, stable): every registered bridge, this one included, was in
    the group then, so the check would fail only if one of them has dropped out of Kafka since.

    Claiming early is safe either way: Kafka gives each partition of a generation to one member, and a bridge
    obeying ZooKeeper claims through the same owner nodes. The describe still runs, beside the claims; if it
    finds a registered bridge missing, the bridge decides again at once and falls back as it would have."""
    return (
        last is not None
        and last.stable
        and consumer_id in registered_bridges
        and set(registered_bridges) <= last.client_ids
    )


@dataclass(frozen=True, slots=True)
class KafkaGroupView:
    """What a bridge knows of its Kafka group's members when it decides whether it may fall back.

    `described` is the group at the last DescribeGroups that answered; None when none ever did. `current` is
    False when the describe for this decision failed and `described` is the last known composition.
    `rebalancing` is True while the embedded member is between a revoke and its next assignment: a member
    joining then may not be described yet.
    """

    described: KafkaGroup | None
    current: bool = True
    rebalancing: bool = False

    def outside_zookeeper(self, registered_bridges: Set[str]) -> tuple[str, ...]:
        """Client ids (one per member, sorted) of the members ZooKeeper's assignment does not account for:
        plain Kafka consumers and bridges not registered under `ids` (`protocol.group.outside_zookeeper`)."""
        described = self.described
        return tuple(sorted(m.client_id for m in outside_zookeeper(described, registered_bridges))) if described else ()


NEVER_DESCRIBED = KafkaGroupView(described=None, current=False)


def _shown(ids: tuple[str, ...], limit: int = 3) -> str:
    unique = sorted(set(ids))
    return ", ".join(unique[:limit]) + (f" and {len(unique) - limit} more" if len(unique) > limit else "")


def guard_fallback(
    decision: AuthorityDecision, mode: ModeNode, bridges: Set[str], group: KafkaGroupView
) -> AuthorityDecision:
    """Hold (own nothing) instead of falling back to ZooKeeper while the mode is `kafka` and the Kafka group
    has, may have, or last had members that are not registered bridges (`bridges`: the registered bridges,
    `Group.registered_bridges`).

    Only the fallback is guarded: Kafka authority, and a mode an operator set to `zookeeper` (whose preflight
    refuses while plain consumers are in the group) or left absent or unknown, pass unchanged.
    """
    if decision.authority is Authority.KAFKA or mode.mode is not Mode.KAFKA:
        return decision
    kind = HoldKind.REBALANCE if group.rebalancing else HoldKind.PLAIN
    if kind is HoldKind.REBALANCE:
        why = "a Kafka rebalance is in progress (a plain Kafka consumer may be joining)"
    elif group.described is None:
        why = "the Kafka group's members are unknown (it could not be described yet)"
    else:
        outside = group.outside_zookeeper(bridges)
        if not outside:
            return decision
        when = "" if group.current else " when it was last described"
        why = f"the Kafka group had {len(outside)} member(s) that are no registered bridge{when} ({_shown(outside)})"
    reason = (
        f"holding nothing instead of falling back to zookeeper ({decision.reason}): {why}; ZooKeeper's "
        "assignment knows nothing of plain Kafka consumers"
    )
    return replace(decision, reason=reason, hold=kind)


# -- how loud a hold is -------------------------------------------------------------------------------------

HOLD_WARN_S = 5.0  # a hold for a Kafka rebalance in progress is routine (INFO) unless it lasts this long


@dataclass(frozen=True, slots=True)
class Hold:
    """A bridge's current hold, as far as logging it goes: `kind` None when it holds nothing; `since` when it
    began (monotonic seconds); `warned` once logged at WARNING or above."""

    kind: HoldKind | None = None
    since: float = 0.0
    warned: bool = False


def routine(hold: Hold, decision: AuthorityDecision) -> bool:
    """Whether `decision` enters, or ends back under Kafka authority, a hold that only waits for a Kafka
    rebalance in progress and has not lasted: every Kafka join or leave of the group goes through one, so
    it is logged at INFO (the authority switch included), not WARNING."""
    if decision.hold is not None:
        return decision.hold is HoldKind.REBALANCE and hold.kind is not HoldKind.PLAIN and not hold.warned
    return hold.kind is HoldKind.REBALANCE and not hold.warned and decision.authority is Authority.KAFKA


def next_hold(hold: Hold, decision: AuthorityDecision, now: float) -> tuple[Hold, int | None, str]:
    """The hold after `decision`, and what to log about it (a level, or None for nothing, and a message):
    entering the guard proper once at ERROR; a rebalance hold at INFO, once at WARNING if it lasts
    `HOLD_WARN_S`; its end at INFO when routine, else WARNING."""
    kind = decision.hold
    since = now if kind is not None and hold.kind is None else hold.since
    lasted = now - hold.since
    if kind is HoldKind.PLAIN and hold.kind is not HoldKind.PLAIN:
        return Hold(kind, since, True), logging.ERROR, decision.reason
    if kind is HoldKind.REBALANCE and hold.kind is None:
        return Hold(kind, since), logging.INFO, decision.reason
    if kind is HoldKind.REBALANCE and not hold.warned and lasted >= HOLD_WARN_S:
        return Hold(kind, since, True), logging.WARNING, f"still {decision.reason} after {lasted:.0f}s"
    if kind is None and hold.kind is not None:
        level = logging.INFO if routine(hold, decision) else logging.WARNING
        return Hold(), level, f"no longer holding nothing after {lasted:.1f}s: {decision.reason}"
    return Hold(kind, since, hold.warned) if kind is not None else Hold(), None, ""
