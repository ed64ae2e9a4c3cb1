"""Which events make the rebalance worker evaluate, and what an evaluation may skip: pure rules over the
triggers of one batch of events and the worker's state, so that the worker's loop only carries them out.

No I/O here: the worker (`coordination/worker.py`) reads the clock and the queue, these functions decide.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from enum import Enum

from migrator.assign.model import ThreadId
from migrator.protocol.codecs import Authority
from migrator.protocol.events import (
    CommitRequest,
    Event,
    KafkaAssigned,
    KafkaRevoked,
    Shutdown,
    Trigger,
)
from migrator.protocol.partition import TopicPartition

KAFKA_TRIGGERS = frozenset({Trigger.KAFKA_ASSIGNMENT, Trigger.KAFKA_LOST})
"""The embedded member's events: they matter to a decision only where Kafka may be obeyed."""

OPERATOR_TRIGGERS = frozenset({Trigger.START, Trigger.MODE, Trigger.NEW_SESSION})
"""Triggers an operator may be waiting on (`set-mode --wait`, `status`): the authority is published after
them even when nothing changed."""


class Gate(Enum):
    """What the worker does with a batch of triggers."""

    EVALUATE = "evaluate"
    """Read the snapshot, decide, release, claim."""
    PREFETCH = "prefetch"
    """Only describe the Kafka group now, so a later switch to Kafka does not wait for it."""
    IDLE = "idle"


def gate(triggers: Set[Trigger], *, mode_is_kafka: bool, authority: Authority) -> Gate:
    """A batch of only Kafka events cannot change the outcome of a bridge that neither obeys Kafka nor is in
    mode `kafka` (the rule says `zookeeper` whatever Kafka does): skip the evaluation, but still describe
    the group after an assignment. Anything else evaluates."""
    if not triggers:
        return Gate.IDLE
    if not triggers <= KAFKA_TRIGGERS or mode_is_kafka or authority is Authority.KAFKA:
        return Gate.EVALUATE
    return Gate.PREFETCH if Trigger.KAFKA_ASSIGNMENT in triggers else Gate.IDLE


def coalesces(first: Event) -> bool:
    """Whether the worker waits a moment for more events after `first`, to merge them into one evaluation.
    Not for events whose poster waits for an answer (a revoke holds Kafka's rebalance barrier), nor for a
    Kafka assignment: the group's partitions wait for it."""
    return not isinstance(first, (KafkaRevoked, KafkaAssigned, Shutdown, CommitRequest))


def refreshable(triggers: Set[Trigger], last_usable: bool, last_watched: bool) -> bool:
    """Whether a rebalance for `triggers` may reuse the last full snapshot (`last_usable`: there is one and
    it was usable), re-reading only the mode node if it changed.

    Members, migration ids, the mode and the partitions of topics in ZooKeeper are each covered by a kazoo
    watch recipe that posts its own trigger on any change, including after a reconnect; so when the only
    trigger is the mode, nothing else can have changed since the last read. An operator's switch then costs
    each bridge one read instead of three dependent round trips. A Kafka assignment changes nothing in
    ZooKeeper either, and it is on every Kafka rebalance's critical path (the group's partitions wait for
    it): it reuses the snapshot too, unless part of it came from the brokers (`last_watched` false: a topic
    known only to the brokers, whose change only a Kafka rebalance shows). Any other Kafka event reads
    everything.
    """
    if not last_usable:
        return False
    kinds = set(triggers)
    return kinds == {Trigger.MODE} or (
        last_watched and kinds in ({Trigger.KAFKA_ASSIGNMENT}, {Trigger.MODE, Trigger.KAFKA_ASSIGNMENT})
    )


def releases_on_revoke(authority: Authority, mode_is_kafka: bool) -> bool:
    """In mode `kafka` a Kafka revoke releases everything, even while ZooKeeper is obeyed: the rebalance may
    be a plain Kafka consumer joining, and Kafka's barrier (the revoke callback) must not let it start on a
    partition this bridge still holds. The next decision claims again if no plain member is there."""
    return authority is Authority.KAFKA or mode_is_kafka


def revoked_holdings(
    owned: Mapping[TopicPartition, ThreadId],
    revoked: Set[TopicPartition] | None,
    authority: Authority,
    mode_is_kafka: bool,
) -> dict[TopicPartition, ThreadId]:
    """What a Kafka revoke releases (`releases_on_revoke`): everything owned under the eager protocol or for
    a loss (`revoked` None); under the cooperative one only the revoked partitions, while Kafka is obeyed.
    The others stay with this member, their owner nodes untouched, and keep flowing. Obeying ZooKeeper in
    mode `kafka`, a cooperative revoke still releases everything: what this bridge holds is ZooKeeper's
    assignment, not Kafka's, and a plain consumer may be joining."""
    if not releases_on_revoke(authority, mode_is_kafka):
        return {}
    if revoked is None or authority is not Authority.KAFKA:
        return dict(owned)
    return {tp: th for tp, th in owned.items() if tp in revoked}


def tells_listener(changed: bool, triggers: Set[Trigger]) -> bool:
    """`before_starting_fetchers` after every change of ownership or authority, and once at the start."""
    return changed or Trigger.START in triggers


def publishes(changed: bool, triggers: Set[Trigger]) -> bool:
    """Publish the authority when it changed, or when an operator may be waiting for it; not on every Kafka
    retry of a bridge the broker refuses."""
    return changed or bool(OPERATOR_TRIGGERS & set(triggers))


def due(now: float, deadline: float | None) -> bool:
    """Whether a deadline of the worker's (a retry, a re-check, the next auto-commit) has come."""
    return deadline is not None and now >= deadline


def wait_timeout(now: float, *deadlines: float | None) -> float | None:
    """How long the worker may wait for an event before the earliest deadline (None: no deadline)."""
    due = [d for d in deadlines if d is not None]
    return max(0.0, min(due) - now) if due else None


def label(triggers: Set[Trigger]) -> str:
    """The triggers as the rebalance log names them."""
    return ", ".join(sorted(t.value for t in triggers))


DEFER_S = 5.0  # how long ZooKeeper events wait for the assignment that ends a Kafka rebalance


def defers(triggers: Set[Trigger], *, rebalancing_s: float | None, mode_is_kafka: bool, holds: bool) -> bool:
    """Whether a batch of `triggers` waits for the Kafka assignment instead of being evaluated now.

    In mode kafka, between its embedded member's revoke and its next assignment (`rebalancing_s`: for how
    long; None when no Kafka rebalance is under way), a bridge that `holds` nothing could only decide to go
    on holding nothing (the fallback guard's "Kafka rebalance in progress"), and that evaluation would keep
    the worker busy when the assignment arrives, which every partition of the group waits for. At most
    `DEFER_S`; a mode change is the operator's word and is never deferred."""
    in_rebalance = rebalancing_s is not None and rebalancing_s < DEFER_S
    return bool(triggers) and in_rebalance and mode_is_kafka and not holds and Trigger.MODE not in triggers


def claims_wait_first(triggers: Set[Trigger], *, prior: Authority, decided: Authority) -> bool:
    """Whether a claim waits for the previous owners' nodes to go before creating its own (`Holdings.claim`).

    Not after a Kafka assignment obeyed as before (or at this member's start): every member the Kafka
    rebalance took partitions from released them in its revoke, before the group's assignment was handed
    out, so the nodes are gone or going and creating them at once rarely conflicts. Everywhere else, and
    whenever the mode changed, the previous owners may be releasing at the same moment (a switch): waiting
    first avoids create-conflict-delete-retry churn."""
    after_kafka_rebalance = Trigger.KAFKA_ASSIGNMENT in triggers and Trigger.MODE not in triggers
    kept_kafka = decided is Authority.KAFKA and (prior is Authority.KAFKA or Trigger.START in triggers)
    return not (after_kafka_rebalance and kept_kafka)


MEMBER_TRIGGERS = frozenset({Trigger.IDS, Trigger.MIGRATION_IDS})
"""The watches on the member listings: what a read of the changed members alone answers."""
MEMBERS_READ_TRIGGERS = MEMBER_TRIGGERS | {Trigger.START}
"""... and the start, when the group was read while the embedded member joined (`RebalanceWorker.preread`):
this member's own registration and whoever registered since are then all that is new."""


def reads_members_only(triggers: Set[Trigger], last_usable: bool, last_watched: bool) -> bool:
    """Whether a rebalance for `triggers` may read only the members that changed since the last snapshot
    (`zk.snapshot.read_members`), keeping its mode and partitions: when a member listing changed (or the
    connector starts over a snapshot read moments before) and nothing but a Kafka assignment besides. The
    mode and every subscribed topic's partitions are watched, each posting its own trigger on a change (the
    reasoning of `refreshable`), so a batch without those triggers changed neither; a snapshot
    with parts from the brokers (`last_watched` false) is read whole."""
    kinds = set(triggers)
    return (
        last_usable
        and last_watched
        and bool(kinds & MEMBERS_READ_TRIGGERS)
        and kinds <= MEMBERS_READ_TRIGGERS | {Trigger.KAFKA_ASSIGNMENT}
    )
