"""What a bridge knows of its Kafka group (`KafkaGroupTracker`), with a hand-moved clock: when it describes
the group, how long a Kafka rebalance counts as in progress, what it keeps when DescribeGroups fails."""

from __future__ import annotations

import threading

from migrator.coordination.authority import AuthorityDecision, HoldKind
from migrator.coordination.kafka_group import DESCRIBE_RETRY_S, REBALANCE_HOLD_S, KafkaGroupTracker, Membership
from migrator.protocol.codecs import Authority
from migrator.protocol.kafka import KafkaGroup
from migrator.protocol.partition import TopicPartition
from tests.helpers.coordination_fakes import FakeAdmin, FakeClock, FakeMember, snapshot, tracker

T = tuple(TopicPartition("t", p) for p in range(4))
BRIDGES = snapshot({"g_b0": {"t": 1}, "g_b1": {"t": 1}}, bridges={"g_b0", "g_b1"}, mode=b"kafka")
WITH_LEGACY = snapshot({"g_b0": {"t": 1}, "g_l": {"t": 1}}, bridges={"g_b0"}, mode=b"kafka")
FALLBACK = AuthorityDecision(Authority.ZOOKEEPER, "legacy connector registered: g_l")


def _tracker(admin: FakeAdmin) -> tuple[KafkaGroupTracker, FakeClock]:
    clock = FakeClock()
    return tracker(FakeMember("g_b0"), admin, clock), clock


def test_kafka_takes_commits_only_while_the_member_has_an_assignment() -> None:
    t, _ = _tracker(FakeAdmin())
    assert not t.coordinated()
    t.assigned(T)
    assert t.coordinated()
    t.unavailable("GROUP_MAX_SIZE_REACHED")
    assert not t.coordinated()
    t.assigned(T)
    t.revoked(lost=True)
    assert not t.coordinated()


def test_the_membership_state_is_apart_from_its_log_text() -> None:
    t, clock = _tracker(FakeAdmin())
    assert (t.membership, t.rebalancing_since()) == (Membership.NOT_JOINED, None)
    t.assigned(T)
    assert (t.membership, t.reason) == (Membership.ASSIGNED, "")
    t.revoked(lost=False)
    assert (t.membership, t.rebalancing_since()) == (Membership.REBALANCING, clock())
    assert t.coordinated()  # a revoke for a rebalance keeps the generation
    t.unavailable("no broker reachable", connection=True)
    assert (t.membership, t.reason) == (Membership.UNAVAILABLE, "no broker reachable")
    t.assigned(T)
    t.unavailable("no broker reachable", connection=True)  # an assigned member keeps its generation
    assert t.membership is Membership.ASSIGNED
    t.revoked(lost=True)
    assert (t.membership, t.reason) == (Membership.LOST, "the embedded member lost its Kafka assignment")


def test_the_group_is_described_once_per_kafka_rebalance() -> None:
    admin = FakeAdmin({"g_b0": T[:2], "g_b1": T[2:]})
    t, _ = _tracker(admin)
    t.assigned(T[:2])
    for _ in range(3):
        health, group = t.health(BRIDGES)
        assert health.healthy and group is not None
    assert admin.describes == 1
    t.assigned(T[:2])  # the next rebalance
    t.health(BRIDGES)
    assert admin.describes == 2


def test_a_group_still_rebalancing_is_described_again() -> None:
    admin = FakeAdmin({"g_b0": T[:2], "g_b1": T[2:]}, state="PreparingRebalance")
    t, _ = _tracker(admin)
    t.assigned(T[:2])
    t.health(BRIDGES)
    t.health(BRIDGES)
    assert admin.describes == 2


def test_a_bridge_missing_from_the_group_is_named() -> None:
    t, _ = _tracker(FakeAdmin({"g_b0": T}))
    t.assigned(T)
    health, _ = t.health(BRIDGES)
    assert health.joined and health.missing_bridges == {"g_b1"}
    t2, _ = _tracker(FakeAdmin({"g_b1": T}))
    t2.assigned(T)
    assert not t2.health(BRIDGES)[0].joined  # this bridge itself is not in the described group


def test_a_bridge_that_joined_after_the_cached_description_is_not_taken_for_missing() -> None:
    admin = FakeAdmin({"g_b0": T})
    t, _ = _tracker(admin)
    t.assigned(T)
    only_us = snapshot({"g_b0": {"t": 1}}, bridges={"g_b0"}, mode=b"kafka")
    assert t.health(only_us)[0].healthy
    # g_b1 joined in a cooperative rebalance that gave our member nothing new, then registered
    admin.members = {"g_b0": T[:3], "g_b1": T[3:]}
    health, group = t.health(BRIDGES)
    assert health.healthy and group is not None and group.client_ids == {"g_b0", "g_b1"}
    asked = admin.describes
    assert t.health(BRIDGES)[0].healthy and admin.describes == asked  # the fresh stable description is kept
    admin.members = {"g_b0": T}  # g_b1 left the Kafka group but is still registered
    t.assigned(T)
    health, _ = t.health(BRIDGES)
    assert health.missing_bridges == {"g_b1"}


def test_a_revoke_holds_as_a_rebalance_in_progress_only_for_a_while() -> None:
    t, clock = _tracker(FakeAdmin({"g_b0": T}))
    t.assigned(T)
    t.revoked(lost=False)
    assert t.guard(WITH_LEGACY, FALLBACK, None).hold is HoldKind.REBALANCE
    clock.advance(REBALANCE_HOLD_S)
    assert t.guard(WITH_LEGACY, FALLBACK, None) == FALLBACK  # no plain member described: obey ZooKeeper


def test_when_describing_fails_the_last_known_members_count_and_it_asks_again_only_later() -> None:
    admin = FakeAdmin({"g_b0": T[:2], "rdkafka": T[2:]})
    t, clock = _tracker(admin)
    assert t.guard(WITH_LEGACY, FALLBACK, None).hold is HoldKind.PLAIN
    admin.down = True
    d = t.guard(WITH_LEGACY, FALLBACK, None)
    assert d.hold is HoldKind.PLAIN and "when it was last described" in d.reason
    asked = admin.describes
    clock.advance(DESCRIBE_RETRY_S / 2)
    assert t.guard(WITH_LEGACY, FALLBACK, None).hold is HoldKind.PLAIN
    assert admin.describes == asked  # each failure costs the admin timeout: not again so soon
    admin.down, admin.members = False, {"g_b0": T}
    clock.advance(DESCRIBE_RETRY_S / 2)
    assert t.guard(WITH_LEGACY, FALLBACK, None) == FALLBACK  # described again: the plain consumer is gone
    assert admin.describes == asked + 1


def test_an_unanswered_describe_is_not_repeated_at_once_unless_a_new_assignment_proves_kafka_back() -> None:
    admin = FakeAdmin({"g_b0": T[:2], "g_b1": T[2:]})
    t, clock = _tracker(admin)
    t.assigned(T[:2])
    admin.down = True
    health, _ = t.health(BRIDGES)
    assert not health.joined and health.unanswered
    asked = admin.describes
    clock.advance(DESCRIBE_RETRY_S / 2)
    assert t.health(BRIDGES)[0].unanswered and admin.describes == asked  # each try costs the admin timeout
    admin.down = False
    clock.advance(DESCRIBE_RETRY_S / 2)
    assert t.health(BRIDGES)[0].healthy and admin.describes == asked + 1  # the worker's re-check asks again
    admin.down = True
    t.assigned(T[:2])  # a Kafka rebalance: the group is described afresh...
    assert t.health(BRIDGES)[0].unanswered
    admin.down = False
    t.assigned(T[:2])  # ...and an assignment shows the coordinator answers: no waiting out the retry delay
    assert t.health(BRIDGES)[0].healthy


def test_no_broker_reachable_costs_an_assigned_member_nothing_until_librdkafka_says_the_assignment_is_lost() -> None:
    """`_ALL_BROKERS_DOWN` arrives while the coordinator answers (librdkafka counts brokers it has not
    reconnected to since they were down), and after a real outage no event says the member is back: taken as
    a loss, it sent bridges to ZooKeeper during a rolling restart of three brokers. The member keeps its
    generation; a session that times out ends in a lost revoke, and only that costs the assignment."""
    admin = FakeAdmin({"g_b0": T[:2], "g_b1": T[2:]})
    t, _ = _tracker(admin)
    t.assigned(T[:2])
    assert t.health(BRIDGES)[0].healthy
    admin.down = True
    t.unavailable("_ALL_BROKERS_DOWN", connection=True)
    assert t.coordinated() and t.health(BRIDGES)[0].healthy  # the group as of the assignment still holds
    t.revoked(lost=True)  # the session timed out
    assert not t.coordinated() and not t.health(BRIDGES)[0].joined
    admin.down = False
    t.assigned(T[:2])
    assert t.health(BRIDGES)[0].healthy


def test_no_broker_reachable_before_an_assignment_or_a_refused_member_waits_for_an_assignment() -> None:
    t, _ = _tracker(FakeAdmin({"g_b1": T}))
    t.unavailable("_ALL_BROKERS_DOWN", connection=True)
    health, _ = t.health(BRIDGES)
    assert not health.joined and not t.coordinated()
    t2, _ = _tracker(FakeAdmin({"g_b0": T}))
    t2.assigned(T)
    t2.unavailable("GROUP_MAX_SIZE_REACHED")
    health, _ = t2.health(BRIDGES)
    assert not health.joined and not health.unanswered  # only an assignment ends it


def test_a_group_never_described_is_held_conservatively() -> None:
    admin = FakeAdmin()
    admin.down = True
    t, _ = _tracker(admin)
    assert t.guard(WITH_LEGACY, FALLBACK, None).hold is HoldKind.PLAIN


def test_kafka_authority_and_other_modes_pass_the_guard_untouched() -> None:
    t, _ = _tracker(FakeAdmin({"rdkafka": T}))
    kafka = AuthorityDecision(Authority.KAFKA, "mode is kafka and every member is a bridge in the Kafka group")
    assert t.guard(WITH_LEGACY, kafka, None) == kafka
    zk_mode = snapshot({"g_b0": {"t": 1}}, bridges={"g_b0"}, mode=b"zookeeper")
    assert t.guard(zk_mode, FALLBACK, None) == FALLBACK


class _ThreadNoting(FakeAdmin):
    """Notes which thread each DescribeGroups ran on."""

    def __init__(self, members: dict[str, tuple[TopicPartition, ...]]) -> None:
        super().__init__(members)
        self.threads: list[str] = []

    def describe_group(self, group: str) -> KafkaGroup:
        self.threads.append(threading.current_thread().name)
        return super().describe_group(group)


def test_a_describe_begun_ahead_answers_the_health_check_of_that_assignment_only() -> None:
    admin = _ThreadNoting({"g_b0": T[:2], "g_b1": T[2:]})
    t, _ = _tracker(admin)
    t.describe_ahead()  # not assigned yet: nothing to describe for
    t.assigned(T[:2])
    t.describe_ahead()
    t.describe_ahead()  # once per assignment
    assert t.health(BRIDGES)[0].healthy
    assert admin.threads == ["describe-ahead"]
    t.describe_ahead()  # described already
    assert admin.threads == ["describe-ahead"]
    t.assigned(T[2:])
    t.describe_ahead()
    t.revoked(lost=False)  # a rebalance after it began: its answer is of the group before
    t.assigned(T[:2])
    assert t.health(BRIDGES)[0].healthy
    for helper in [th for th in threading.enumerate() if th.name == "describe-ahead"]:
        helper.join()
    assert sorted(admin.threads) == sorted(["describe-ahead", "describe-ahead", threading.current_thread().name])
