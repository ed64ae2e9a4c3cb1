"""The rebalance worker's loop, event by event, over in-memory collaborators and a hand-moved clock.

What ZooKeeper and Kafka do is proved on the real cluster (tests/integration, tests/chaos); here only the
worker's own decisions: when it evaluates, what it reads, when it retries and re-checks, what it releases.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import replace

import pytest

from migrator.consumer.listener import ConsumerRebalanceListener
from migrator.coordination.authority import HoldKind
from migrator.coordination.worker import GUARD_RECHECK_S, KAFKA_RECHECK_S
from migrator.protocol.codecs import Authority, ModeNode
from migrator.protocol.events import (
    Changed,
    CommitRequest,
    KafkaAssigned,
    KafkaLost,
    KafkaRevoked,
    SessionLost,
    SessionRestored,
    Shutdown,
    Trigger,
)
from migrator.protocol.kafka import KafkaGroup
from migrator.protocol.membership_delta import Listing
from migrator.protocol.partition import TopicPartition
from tests.helpers.coordination_fakes import FakeAdmin, Rig, rig, snapshot

T = [TopicPartition("t", p) for p in range(4)]
TWO_MEMBERS = {"g_a": {"t": 1}, "g_b": {"t": 1}}
START = Changed(Trigger.START)


def test_the_start_claims_zookeepers_assignment_and_publishes_it() -> None:
    r = rig("g_a", snapshot(TWO_MEMBERS))
    r.worker.step([START])
    assert r.holdings.owned == {T[0]: "g_a-0", T[1]: "g_a-0"}  # range: the first half
    assert [(p.authority, p.generation, p.held) for p in r.registry.published] == [(Authority.ZOOKEEPER, 1, False)]


def test_a_rebalance_that_keeps_conflicting_is_retried_once_its_deadline_passes_on_the_clock() -> None:
    r = rig("g_a", snapshot(TWO_MEMBERS), max_retries=2)
    r.holdings.conflicts = 2
    r.worker.step([START])
    assert r.holdings.claims == 2 and not r.holdings.owned
    assert r.worker.state.retry_at is not None
    r.worker.step([])  # the back-off has not passed on the worker's clock: nothing to do
    assert r.holdings.claims == 2
    r.clock.advance(0.001)
    r.worker.step([])
    assert r.holdings.claims == 3 and set(r.holdings.owned) == {T[0], T[1]}
    assert r.worker.state.retry_at is None


def _held_bridge() -> Rig:
    """A bridge in mode kafka next to a legacy connector (so the rule says zookeeper) while a plain Kafka
    consumer is in the group: the guard holds nothing."""
    members = {"g_b0": {"t": 1}, "g_l": {"t": 1}}
    current = snapshot(members, bridges={"g_b0"}, mode=b"kafka")
    return rig("g_b0", current, bridge=True, admin=FakeAdmin({"rdkafka": (T[2], T[3])}))


def test_a_hold_is_rechecked_on_the_clock_and_ends_when_the_plain_consumer_left() -> None:
    r = _held_bridge()
    r.worker.step([START])
    assert r.worker.state.hold.kind is HoldKind.PLAIN and not r.holdings.owned
    assert r.registry.published[-1].held and r.registry.published[-1].authority is Authority.ZOOKEEPER
    assert r.worker.state.retry_at == r.clock.now + GUARD_RECHECK_S
    assert r.admin is not None
    r.admin.members = {}  # the plain consumer left; no event reaches the bridge
    describes = r.admin.describes
    r.clock.advance(GUARD_RECHECK_S / 2)
    r.worker.step([])
    assert r.admin.describes == describes and r.worker.state.hold.kind is HoldKind.PLAIN
    r.clock.advance(GUARD_RECHECK_S / 2)
    r.worker.step([])
    assert r.worker.state.hold.kind is None
    assert set(r.holdings.owned) == {T[0], T[1]}  # ZooKeeper's range, which now overlaps nobody
    assert not r.registry.published[-1].held


def test_kafka_events_alone_do_not_read_zookeeper_while_zookeeper_rules() -> None:
    r = rig("g_b0", snapshot({"g_b0": {"t": 1}}, bridges={"g_b0"}, mode=b"zookeeper"), bridge=True)
    r.worker.step([START])
    assert r.snapshots.reads == 1 and r.admin is not None
    describes = r.admin.describes
    r.worker.step([KafkaAssigned(tuple(T))])
    assert r.snapshots.reads == 1
    assert r.admin.describes == describes + 1  # prefetched, so a later switch does not wait for it
    r.worker.step([KafkaLost("GROUP_MAX_SIZE_REACHED")])
    assert r.snapshots.reads == 1


def test_a_mode_change_alone_rereads_only_the_mode() -> None:
    r = rig("g_a", snapshot(TWO_MEMBERS))
    r.worker.step([START])
    r.snapshots.current = replace(r.snapshots.current, mode=ModeNode.decode(b"zookeeper"))
    r.worker.step([Changed(Trigger.MODE)])
    assert (r.snapshots.reads, r.snapshots.mode_reads) == (1, 1)
    assert r.registry.published[-1].generation == 2  # an operator waits for it after a mode write
    r.worker.step([Changed(Trigger.MODE), Changed(Trigger.IDS)])
    assert (r.snapshots.reads, r.snapshots.mode_reads) == (2, 1)


def _kafka_bridge() -> Rig:
    """The only member, a bridge in mode kafka, assigned everything by Kafka."""
    current = snapshot({"g_b0": {"t": 2}}, bridges={"g_b0"}, mode=b"kafka")
    r = rig("g_b0", current, bridge=True, admin=FakeAdmin({"g_b0": tuple(T)}))
    r.worker.step([KafkaAssigned(tuple(T)), START])
    assert r.worker.state.authority is Authority.KAFKA and set(r.holdings.owned) == set(T)
    assert set(r.holdings.owned.values()) == {"g_b0-0", "g_b0-1"}  # subdivided among its two threads
    return r


def test_a_fallback_because_kafka_did_not_answer_is_rechecked_on_the_clock() -> None:
    """A DescribeGroups that goes unanswered after a Kafka rebalance makes the rule say zookeeper; the
    bridge's own member stays assigned, so no event will say when Kafka answers again. Without a re-check it
    obeyed ZooKeeper for minutes while the other bridges obeyed Kafka (the 20-minute soak)."""
    r = _kafka_bridge()
    assert r.admin is not None
    r.admin.down = True
    r.worker.step([KafkaRevoked()])
    r.worker.step([KafkaAssigned(tuple(T))])
    assert r.worker.state.authority is Authority.ZOOKEEPER and r.worker.state.hold.kind is None
    assert r.worker.state.retry_at == r.clock.now + KAFKA_RECHECK_S
    r.admin.down = False  # Kafka answers again; nothing reaches the bridge
    r.clock.advance(KAFKA_RECHECK_S)
    r.worker.step([])
    assert r.worker.state.authority is Authority.KAFKA and set(r.holdings.owned) == set(T)
    assert r.worker.state.retry_at is None


def test_a_mode_write_that_changes_nothing_says_why_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    """The 20-minute soak's "silent workers": after a flip to kafka, bridges on ZooKeeper authority whose
    DescribeGroups went unanswered decided to stay, and logged nothing, so they looked held."""
    current = snapshot({"g_b0": {"t": 2}}, bridges={"g_b0"}, mode=b"zookeeper")
    r = rig("g_b0", current, bridge=True, admin=FakeAdmin({"g_b0": tuple(T)}))
    r.worker.step([START])
    r.worker.step([KafkaAssigned(tuple(T))])  # prefetched: the group's members are known
    assert r.worker.state.authority is Authority.ZOOKEEPER and r.admin is not None
    r.admin.down = True  # from here on DescribeGroups goes unanswered
    r.worker.step([KafkaRevoked()])  # a Kafka rebalance (the coordinator moved)
    r.worker.step([KafkaAssigned(tuple(T))])
    r.snapshots.current = replace(r.snapshots.current, mode=ModeNode.decode(b"kafka"))
    with caplog.at_level(logging.INFO, logger="migrator.coordination.worker"):
        r.worker.step([Changed(Trigger.MODE)])
    assert r.worker.state.authority is Authority.ZOOKEEPER
    assert [m for m in caplog.messages if m.startswith("mode changed; authority stays zookeeper: Kafka coordination")]
    assert r.worker.state.retry_at == r.clock.now + KAFKA_RECHECK_S  # and re-checked (da60b0c), not left there


def test_a_revoke_under_kafka_authority_releases_everything_before_answering() -> None:
    r = _kafka_bridge()
    revoke = KafkaRevoked()
    r.worker.step([revoke])
    assert revoke.done.done() and not r.holdings.owned
    assert r.holdings.released[-1] == (set(T), "kafka revoke")


def test_a_revoke_while_zookeeper_rules_outside_mode_kafka_keeps_everything() -> None:
    r = rig("g_b0", snapshot({"g_b0": {"t": 1}}, bridges={"g_b0"}), bridge=True)
    r.worker.step([START])
    revoke = KafkaRevoked()
    r.worker.step([revoke])
    assert revoke.done.done() and set(r.holdings.owned) == set(T)


def test_processed_offsets_are_committed_when_the_interval_passes_on_the_clock() -> None:
    r = rig("g_a", snapshot(TWO_MEMBERS), auto_commit_interval_ms=1000)
    r.worker.step([START])
    r.worker.step([])
    assert r.offsets.commits == []
    r.clock.advance(1.0)
    r.worker.step([])
    assert r.offsets.commits == [{T[0]: 7, T[1]: 7}]


def test_shutdown_under_kafka_authority_leaves_both_groups_while_the_owners_still_lock() -> None:
    r = _kafka_bridge()
    done = Shutdown()
    r.worker.step([done])
    assert r.member is not None and r.member.left and not r.registry.registered
    assert r.holdings.released[-1] == (set(T), "shutdown")
    assert done.done.done() and r.worker.state.closed


def test_an_expired_session_drops_everything_and_the_new_one_registers_and_claims_again() -> None:
    r = rig("g_a", snapshot(TWO_MEMBERS))
    r.worker.step([START])
    r.worker.step([SessionLost()])
    assert not r.holdings.owned and not r.worker.state.registered
    r.worker.step([SessionRestored()])
    assert r.registry.registered and set(r.holdings.owned) == {T[0], T[1]}


class _Raising(ConsumerRebalanceListener):
    def before_starting_fetchers(self, consumer_id: str, assignment: object) -> None:  # type: ignore[override]
        raise RuntimeError("application bug")


def test_a_listener_that_raises_makes_the_member_leave_and_only_answer_until_shutdown() -> None:
    r = rig("g_a", snapshot(TWO_MEMBERS))
    r.worker.listener = _Raising()
    r.worker.step([START])
    assert r.worker.state.failed is not None and not r.holdings.owned and not r.registry.registered
    reads = r.snapshots.reads
    commit = CommitRequest()
    r.worker.step([Changed(Trigger.IDS), commit])
    assert commit.done.done() and r.snapshots.reads == reads  # no more rebalances
    done = Shutdown()
    r.worker.step([done])
    assert done.done.done() and r.worker.state.closed


def test_a_cooperative_revoke_releases_only_the_revoked_partitions_and_the_assignment_claims_nothing_again() -> None:
    """KIP-429: a plain consumer joining takes t3 alone; the bridge keeps t0-t2 on their threads, their
    owner nodes neither released nor claimed again (round-robin subdivision of what stays keeps each thread)."""
    r = _kafka_bridge()
    before, claims, releases = dict(r.holdings.owned), r.holdings.claims, len(r.holdings.released)
    assert r.admin is not None
    r.admin.members = {"g_b0": tuple(T[:3]), "plain": (T[3],)}
    revoke = KafkaRevoked(partitions=frozenset({T[3]}))
    r.worker.step([revoke])
    assert revoke.done.done() and r.holdings.released[-1] == ({T[3]}, "kafka revoke")
    r.worker.step([KafkaAssigned(tuple(T[:3]))])
    assert r.worker.state.authority is Authority.KAFKA
    assert r.holdings.owned == {tp: th for tp, th in before.items() if tp != T[3]}
    assert len(r.holdings.released) == releases + 1 and r.holdings.claims == claims


class _LagAfterCommit(FakeAdmin):
    """Notes, at each ListOffsets for the lag gauge, whether the application's commit had been answered."""

    def __init__(self, request: CommitRequest) -> None:
        super().__init__()
        self.request = request
        self.answered_before_lag: list[bool] = []

    def log_end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        self.answered_before_lag.append(self.request.done.done())
        return super().log_end_offsets(tps)


def test_an_application_commit_is_answered_before_the_lag_gauge_asks_kafka_for_the_log_ends() -> None:
    request = CommitRequest()
    admin = _LagAfterCommit(request)
    r = rig("g_a", snapshot(TWO_MEMBERS), admin=admin)
    r.worker.step([START])
    r.worker.step([request])
    assert r.offsets.commits[-1] == {T[0]: 7, T[1]: 7}
    assert admin.answered_before_lag == [True]


def test_a_member_joining_reads_the_changed_members_not_the_whole_snapshot() -> None:
    listed = replace(snapshot(TWO_MEMBERS), ids=Listing(frozenset(TWO_MEMBERS), 2))
    r = rig("g_a", listed)
    r.worker.step([START])
    three = {**TWO_MEMBERS, "g_c": {"t": 1}}
    r.snapshots.current = replace(snapshot(three), ids=Listing(frozenset(three), 3))
    r.worker.step([Changed(Trigger.IDS)])
    assert (r.snapshots.reads, r.snapshots.member_reads) == (1, 1)
    assert len(r.holdings.owned) == 2  # what a full read would have decided: 4 partitions over 3 members
    r.worker.step([Changed(Trigger.IDS), Changed(Trigger.TOPIC)])
    assert (r.snapshots.reads, r.snapshots.member_reads) == (2, 1)


def test_a_kafka_assignment_obeyed_as_before_claims_without_waiting_first() -> None:
    r = _kafka_bridge()
    assert r.holdings.waited_first == [False]  # the start's claim after the first assignment
    r.worker.step([KafkaRevoked()])
    r.worker.step([KafkaAssigned(tuple(T[:2]))])
    assert r.holdings.waited_first == [False, False]
    r.worker.step([Changed(Trigger.MODE), KafkaAssigned(tuple(T))])  # an operator's write: others may be releasing
    assert r.holdings.waited_first == [False, False, True]


def test_a_claim_that_conflicted_waits_for_the_previous_owners_when_it_tries_again() -> None:
    r = _kafka_bridge()
    r.worker.step([KafkaRevoked()])
    r.holdings.conflicts = 1
    r.worker.step([KafkaAssigned(tuple(T))])
    assert r.holdings.waited_first[-2:] == [False, True] and set(r.holdings.owned) == set(T)


class _AnswersAfterClaims(FakeAdmin):
    """DescribeGroups answered only once the worker has claimed (from `hold_until_claimed` on), or after
    `CLAIM_WAIT_S` if it never does first; notes which it was."""

    CLAIM_WAIT_S = 2.0

    def __init__(self, members: dict[str, tuple[TopicPartition, ...]]) -> None:
        super().__init__(members)
        self.claimed: threading.Event | None = None
        self.answered_after_claims: list[bool] = []
        self.answered = threading.Event()

    def hold_until_claimed(self, r: Rig) -> None:
        claimed, claim = threading.Event(), r.holdings.claim

        def claim_and_tell(c: Mapping[TopicPartition, str], *, wait_first: bool = True) -> bool:
            claimed.set()
            return claim(c, wait_first=wait_first)

        r.holdings.claim = claim_and_tell  # type: ignore[method-assign]
        self.claimed = claimed

    def describe_group(self, group: str) -> KafkaGroup:
        if self.claimed is not None:
            self.answered_after_claims.append(self.claimed.wait(self.CLAIM_WAIT_S))
        described = super().describe_group(group)
        self.answered.set()
        return described

    def note_ungates(self, r: Rig) -> list[bool]:
        """Whether the describe had answered at each of the worker's ungates from now on."""
        seen: list[bool] = []
        ungate = r.handoff.ungate

        def noted() -> None:
            seen.append(self.answered.is_set())
            ungate()

        r.handoff.ungate = noted  # type: ignore[method-assign]
        self.answered.clear()
        return seen


def _two_bridges_obeying_kafka() -> tuple[Rig, _AnswersAfterClaims]:
    current = snapshot({"g_b0": {"t": 1}, "g_b1": {"t": 1}}, bridges={"g_b0", "g_b1"}, mode=b"kafka")
    admin = _AnswersAfterClaims({"g_b0": tuple(T[:2]), "g_b1": tuple(T[2:])})
    r = rig("g_b0", current, bridge=True, admin=admin)
    r.worker.step([KafkaAssigned(tuple(T[:2])), START])
    assert r.worker.state.authority is Authority.KAFKA and set(r.holdings.owned) == set(T[:2])
    r.worker.step([KafkaRevoked()])
    admin.hold_until_claimed(r)
    return r, admin


def test_a_kafka_assignment_is_claimed_while_its_describe_is_under_way() -> None:
    """Every registered bridge was in the group at the last describe: the claims need not wait for this
    rebalance's DescribeGroups, which answers beside them, and with no application listener to tell first
    the streams get records before it answers."""
    r, admin = _two_bridges_obeying_kafka()
    ungates = admin.note_ungates(r)
    r.worker.step([KafkaAssigned(tuple(T[1:3]))])
    assert admin.answered_after_claims == [True]
    assert r.worker.state.authority is Authority.KAFKA and set(r.holdings.owned) == set(T[1:3])
    assert ungates[0] is False


def test_an_application_listener_is_told_the_described_assignment_before_records_flow() -> None:
    r, admin = _two_bridges_obeying_kafka()
    told: list[dict[str, dict[int, str]]] = []

    class Listener(ConsumerRebalanceListener):
        def before_starting_fetchers(self, consumer_id: str, assignment: Mapping[str, Mapping[int, str]]) -> None:
            told.append({t: dict(parts) for t, parts in assignment.items()})

    r.worker.listener = Listener()
    admin.members = {"g_b0": tuple(T[1:3]), "g_b1": (T[0], T[3])}
    ungates = admin.note_ungates(r)
    r.worker.step([KafkaAssigned(tuple(T[1:3]))])
    assert set(ungates) == {True}  # the describe answered before any record was handed out
    assert told[-1]["t"] == {1: "g_b0-0", 2: "g_b0-0", 0: "g_b1-0", 3: "g_b1-0"}


def test_a_describe_after_the_claims_that_misses_a_bridge_falls_back_as_before() -> None:
    r, admin = _two_bridges_obeying_kafka()
    admin.members = {"g_b0": tuple(T)}  # g_b1 dropped out of the Kafka group, still registered
    r.worker.step([KafkaAssigned(tuple(T))])
    assert r.worker.state.authority is Authority.ZOOKEEPER
    assert set(r.holdings.owned) == set(T[:2])  # ZooKeeper's range assignment over both registered bridges
    assert r.holdings.released[-1][0] == set(T[2:])  # what the claim on Kafka's word took, given back


def test_a_registered_bridge_the_last_describe_did_not_show_is_waited_for() -> None:
    r, admin = _two_bridges_obeying_kafka()
    r.snapshots.current = snapshot(
        {"g_b0": {"t": 1}, "g_b1": {"t": 1}, "g_b2": {"t": 1}}, bridges={"g_b0", "g_b1", "g_b2"}, mode=b"kafka"
    )
    admin.members["g_b2"] = ()
    r.worker.step([KafkaAssigned(tuple(T[:2])), Changed(Trigger.IDS)])
    assert admin.answered_after_claims == [False]  # described before claiming, as always
