"""A release in a Kafka-only store (the pykafka dialect) makes its offsets durable before the owner node goes.

pykafka's members, and a pykafka-dialect bridge outside the Kafka group, commit without a generation; the
broker refuses that (UNKNOWN_MEMBER_ID) while the Kafka group still has a member, e.g. a consumer that has not
left yet. The next owner reads Kafka only, so a release whose commit gave up after `offsets.commit.max.retries`
handed over an old offset and that owner processed the records again. Pure logic on a hand-moved clock.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from migrator.coordination.offsets import member_or_simple_commit, retries_left
from migrator.protocol.partition import TopicPartition
from tests.helpers.coordination_fakes import FakeClock, RefusingKafka, kafka_only_store

TP = TopicPartition("t", 0)


def test_a_release_retries_until_kafka_takes_the_offsets_within_the_commit_timeout() -> None:
    clock = FakeClock()
    kafka = RefusingKafka(clock, refusals=12)  # about 3 s of a member that has not left yet: more than 5 retries
    offsets = kafka_only_store(kafka, clock, durable_release=True)
    started = clock()

    assert offsets.commit({TP: 347}, releasing=True) is True

    assert kafka.stored == {TP: 347}  # durable before the caller deletes the owner node
    assert clock() - started <= 10.0


def test_a_release_gives_up_at_the_commit_timeout() -> None:
    clock = FakeClock()
    kafka = RefusingKafka(clock, refusals=10_000)
    offsets = kafka_only_store(kafka, clock, durable_release=True)
    started = clock()

    assert offsets.commit({TP: 347}, releasing=True) is False
    assert 9.5 <= clock() - started <= 10.0 + 1e-9  # bounded: a shutdown ends all the same


@pytest.mark.parametrize(("durable_release", "releasing"), [(True, False), (False, True)])
def test_other_commits_keep_max_retries(durable_release: bool, releasing: bool) -> None:
    clock = FakeClock()
    kafka = RefusingKafka(clock, refusals=12)
    offsets = kafka_only_store(kafka, clock, durable_release=durable_release)

    assert offsets.commit({TP: 5}, releasing=releasing) is False
    assert kafka.refusals == 12 - 6  # the first try and 5 retries


def test_a_store_with_zookeeper_beside_kafka_does_not_wait_on_release() -> None:
    """ZooKeeper is the hand-over there (dual commit): a refused Kafka commit is not worth holding the node."""
    assert (
        kafka_only_store(
            RefusingKafka(FakeClock(), 0), FakeClock(), durable_release=True, dual_commit=True
        )._durable_release
        is False
    )


@pytest.mark.parametrize(
    ("attempt", "now", "releasing", "expected"),
    [
        (0, 0.0, False, True),
        (5, 0.0, False, False),  # max_retries spent
        (5, 0.0, True, True),  # a release goes on while time is left
        (50, 9.7, True, True),
        (50, 9.8, True, False),  # the backoff would end past the deadline
        (0, 9.9, False, False),
    ],
)
def test_retries_left(attempt: int, now: float, releasing: bool, expected: bool) -> None:
    assert retries_left(attempt, 5, now, 0.2, 10.0, releasing=releasing) is expected


class Route:
    """One way of committing: takes what `takes` says, records what it was offered."""

    def __init__(self, takes: bool) -> None:
        self.takes = takes
        self.offered: list[dict[TopicPartition, int]] = []

    def __call__(self, offsets: Mapping[TopicPartition, int], timeout_s: float) -> set[TopicPartition]:
        self.offered.append(dict(offsets))
        return set(offsets) if self.takes else set()


def test_a_member_that_has_just_left_the_group_hands_its_commit_to_a_simple_one() -> None:
    """The broker refuses the old generation (UNKNOWN_MEMBER_ID) and takes generation -1 from an empty group."""
    member, simple = Route(takes=False), Route(takes=True)

    assert member_or_simple_commit(member, simple)({TP: 9}, 10.0) == {TP}
    assert simple.offered == [{TP: 9}]


def test_a_member_in_the_group_commits_with_its_generation_alone() -> None:
    member, simple = Route(takes=True), Route(takes=True)

    assert member_or_simple_commit(member, simple)({TP: 9}, 10.0) == {TP}
    assert simple.offered == []
