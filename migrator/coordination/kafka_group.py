"""What a bridge knows of its Kafka group, for the authority rule and the fallback guard.

Fed by the embedded member's events (assigned, revoked, unavailable) and by DescribeGroups through the
admin client. Owned by the connector's rebalance worker and used only on its thread, so it needs no lock.

Two ways of describing the group, for two questions:
- `health`: is every registered bridge in the group's generation? The answer holds until the next Kafka
  rebalance (eager protocol: every membership change is one, and reaches us as an event), so the group is
  described once per rebalance, prefetched at the assignment, and a switch does not wait for it. (A
  cooperative rebalance reaches every member as an assignment too, if only of nothing new.)
- `guard`: are there plain Kafka consumers? Asked when the rule says `zookeeper` in mode `kafka`, when our
  own member may be out of the group and its events tell us nothing; so it describes afresh, and keeps the
  last answer when Kafka does not give one.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from concurrent.futures import Future
from enum import Enum

from migrator.coordination.authority import (
    UNKNOWN_KAFKA,
    AuthorityDecision,
    KafkaGroupView,
    KafkaHealth,
    guard_fallback,
    needs_group_check,
    presumably_whole,
)
from migrator.coordination.clock import Clock
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.kafka.member import EmbeddedMember
from migrator.protocol.codecs import Authority, Mode
from migrator.protocol.kafka import KafkaGroup
from migrator.protocol.partition import TopicPartition
from migrator.zk.snapshot import Snapshot

log = logging.getLogger(__name__)

DESCRIBE_RETRY_S = 5.0  # after a failed DescribeGroups (each costs the admin timeout), the guard waits this long
REBALANCE_HOLD_S = 30.0  # a Kafka rebalance with no assignment and no error for longer is no longer "in progress"


class Membership(Enum):
    """Where the embedded member stands in its Kafka group, as its own events tell."""

    NOT_JOINED = "not joined"
    """No assignment yet since the bridge started."""
    ASSIGNED = "assigned"
    """In the current generation, with an assignment."""
    REBALANCING = "rebalancing"
    """Revoked for a rebalance, keeping its generation until the next assignment."""
    LOST = "lost"
    """Its assignment was revoked as lost (session timed out, fenced)."""
    UNAVAILABLE = "unavailable"
    """It reported an error that leaves it without a usable generation."""

    @property
    def coordinated(self) -> bool:
        """Whether Kafka accepts commits under the member's generation."""
        return self in (Membership.ASSIGNED, Membership.REBALANCING)


class KafkaGroupTracker:
    def __init__(
        self,
        group: str,
        consumer_id: str,
        member: EmbeddedMember,
        admin: KafkaAdmin | None,
        *,
        clock: Clock = time.monotonic,
    ) -> None:
        self._group = group
        self._consumer_id = consumer_id
        self.member = member
        self._admin = admin
        self.assignment: tuple[TopicPartition, ...] | None = None
        self.membership = Membership.NOT_JOINED
        self.reason: str = UNKNOWN_KAFKA.reason
        """Why the member is not coordinated, for the log and the authority's reason (never branched on)."""
        self._revoked_at: float | None = None  # cleared by the next assignment
        self._last: KafkaGroup | None = None  # the group at the last DescribeGroups that answered
        self._described: KafkaGroup | None = None  # the stable group since our last assignment
        self._describe_retry_at = 0.0
        self._ahead: Future[KafkaGroup] | None = None  # a describe begun since our last assignment (`describe_ahead`)
        self._clock = clock

    # -- the embedded member's events ----------------------------------------------------------------
    def assigned(self, partitions: tuple[TopicPartition, ...]) -> None:
        self.assignment = partitions
        self.membership, self.reason = Membership.ASSIGNED, ""
        self._revoked_at = None
        self._described = self._ahead = None
        self._describe_retry_at = 0.0  # the coordinator just answered our member: ask it again at once

    def revoked(self, lost: bool, partitions: frozenset[TopicPartition] | None = None) -> None:
        """`partitions`: a cooperative revoke, which takes only those; the member keeps the rest and its
        generation, so it stays assigned (and a bridge keeps obeying Kafka for what it keeps)."""
        if partitions is not None and self.assignment is not None and not lost:
            self.assignment = tuple(tp for tp in self.assignment if tp not in partitions)
            return
        self.assignment = None
        self._described = self._ahead = None
        if lost:
            self.membership, self.reason = Membership.LOST, "the embedded member lost its Kafka assignment"
        else:
            self._revoked_at = self._clock()
            if self.membership is Membership.ASSIGNED:
                self.membership = Membership.REBALANCING

    def unavailable(self, reason: str, *, connection: bool = False) -> None:
        """The member reported `reason`. `connection` (no broker reachable) costs an assigned member nothing:
        it keeps its generation and heartbeats again once a broker answers, and if its session times out
        first, librdkafka revokes the assignment as lost (`revoked(lost=True)`), as a plain consumer goes
        on processing until then. Taking the report as a loss was wrong twice over: librdkafka counts every
        broker it has not reconnected to since it was last down as down, so with several brokers the report
        comes while the coordinator answers; and after a real outage no event says the member is back."""
        if connection and self.assignment is not None:
            log.info("the embedded member keeps its Kafka assignment until its session times out: %s", reason)
            return
        self.membership, self.reason = Membership.UNAVAILABLE, reason
        self._described = self._ahead = None

    def coordinated(self) -> bool:
        """Whether the embedded member has a generation Kafka accepts commits under (the offset store asks)."""
        return self.membership.coordinated

    def rebalancing_since(self) -> float | None:
        """When our member's revoke began a Kafka rebalance that has not ended yet (no assignment, no error)."""
        if self.membership is Membership.REBALANCING:
            return self._revoked_at
        return None

    # -- decisions' inputs ---------------------------------------------------------------------------
    def prefetch(self) -> None:
        """Describe now (after an assignment), so a later switch to kafka does not wait for it."""
        if self._admin is not None:
            with contextlib.suppress(KafkaUnavailable):
                self._stable_group()

    def describe_ahead(self) -> None:
        """Begin describing the group on a helper thread, for the health check of the decision under way: it
        then overlaps the snapshot read instead of following it. Only once per assignment, and not while a
        failed describe is being waited out."""
        admin = self._admin
        if admin is None or self.membership is not Membership.ASSIGNED:
            return
        if self._described is not None or self._ahead is not None:
            return
        if self._clock() < self._describe_retry_at:
            return
        ahead: Future[KafkaGroup] = Future()

        def describe() -> None:
            try:
                ahead.set_result(admin.describe_group(self._group))
            except BaseException as exc:  # handed to the worker
                ahead.set_exception(exc)

        threading.Thread(target=describe, name="describe-ahead", daemon=True).start()
        self._ahead = ahead

    def health(self, snap: Snapshot) -> tuple[KafkaHealth, KafkaGroup | None]:
        """Whether this bridge, and every other registered bridge, is in the Kafka group's generation."""
        if self.membership is not Membership.ASSIGNED:
            return KafkaHealth(joined=False, reason=self.reason or UNKNOWN_KAFKA.reason), None
        if not needs_group_check(snap.mode, snap.member_ids, snap.migration_ids) or self._admin is None:
            return KafkaHealth(joined=True), None
        if self._described is None and self._clock() < self._describe_retry_at:
            # it did not answer a moment ago: each try costs the admin timeout, and the worker re-checks anyway
            return KafkaHealth(joined=False, reason="the Kafka group could not be described", unanswered=True), None
        try:
            group = self._stable_group()
        except KafkaUnavailable as exc:
            self._describe_retry_at = self._clock() + DESCRIBE_RETRY_S  # the guard does not ask again now
            return KafkaHealth(joined=False, reason=str(exc), unanswered=True), None
        missing = snap.registered_bridges - group.client_ids
        if missing and group is self._described:
            group = self._described_again(group)
            missing = snap.registered_bridges - group.client_ids
        if self._consumer_id in missing:
            return KafkaHealth(joined=False, reason="this bridge is not in the described Kafka group"), group
        return KafkaHealth(joined=True, missing_bridges=missing), group

    def presumed_health(self, snap: Snapshot) -> KafkaHealth | None:
        """`health` on the last description's word while this assignment's describe (`describe_ahead`) is still
        under way and `presumably_whole` allows it; None when `health` must be waited for. The caller checks
        `health` once its claims are made: the describe then has had their time to answer."""
        ahead = self._ahead
        if self.membership is not Membership.ASSIGNED or self._described is not None or ahead is None or ahead.done():
            return None
        if not needs_group_check(snap.mode, snap.member_ids, snap.migration_ids):
            return None
        if not presumably_whole(self._last, snap.registered_bridges, self._consumer_id):
            return None
        return KafkaHealth(joined=True)

    def guard(self, snap: Snapshot, decision: AuthorityDecision, group: KafkaGroup | None) -> AuthorityDecision:
        """The fallback guard over a fresh (or else the last known) composition of the Kafka group."""
        if decision.authority is Authority.KAFKA or snap.mode.mode is not Mode.KAFKA:
            return decision
        if group is None:
            group = self._describe_afresh()
        since = self.rebalancing_since()
        rebalancing = since is not None and self._clock() - since < REBALANCE_HOLD_S
        view = KafkaGroupView(self._last, current=group is not None, rebalancing=rebalancing)
        return guard_fallback(decision, snap.mode, snap.registered_bridges, view)

    # -- DescribeGroups ------------------------------------------------------------------------------
    def _stable_group(self) -> KafkaGroup:
        """The group as of our last assignment (described once per Kafka rebalance, when stable)."""
        assert self._admin is not None
        if self._described is None:
            ahead, self._ahead = self._ahead, None
            group = self._remember(ahead.result() if ahead is not None else self._admin.describe_group(self._group))
            if not group.stable:
                return group  # mid-rebalance: its outcome reaches us as an event, describe again then
            self._described = group
        return self._described

    def _described_again(self, cached: KafkaGroup) -> KafkaGroup:
        """The group described now, when the one described since our last assignment lacks a registered
        bridge: a bridge registers only once its member has an assignment, and a rebalance that gives our
        member nothing new (a cooperative one, or one whose assignment has not reached us yet) leaves that
        description from before the bridge joined. Falling back on it would stop every partition for a
        member that is in the group. The cached description stays when Kafka does not answer."""
        fresh = self._describe_afresh()
        if fresh is None:
            return cached
        if fresh.stable:
            self._described = fresh
        return fresh

    def _describe_afresh(self) -> KafkaGroup | None:
        """DescribeGroups through the admin client, which works whether or not the embedded member could join.
        None (and the last known members stay) when it fails, and for `DESCRIBE_RETRY_S` after a failure."""
        if self._admin is None or self._clock() < self._describe_retry_at:
            return None
        try:
            return self._remember(self._admin.describe_group(self._group))
        except KafkaUnavailable as exc:
            log.warning("cannot describe the Kafka group (%s); the guard uses its last known members", exc)
            self._describe_retry_at = self._clock() + DESCRIBE_RETRY_S
            return None

    def _remember(self, group: KafkaGroup) -> KafkaGroup:
        self._last = group
        return group
