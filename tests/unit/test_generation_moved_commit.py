"""A member's commit that Kafka refused for its generation is not retried: it cannot succeed before the
member's next assignment, and that assignment waits for the worker making the commit (a cooperative
survivor held its claims 400 ms behind such retries). Pure logic on a hand-moved clock."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from migrator.coordination.offsets import member_or_simple_commit, retries_left
from migrator.protocol.partition import TopicPartition
from tests.helpers.coordination_fakes import FakeClock, RefusingKafka, kafka_only_store

TP = TopicPartition("t", 0)


def test_a_periodic_commit_refused_for_the_generation_is_tried_once_and_kept_for_the_next() -> None:
    clock = FakeClock()
    kafka = RefusingKafka(clock, refusals=1, generation_moved=True, round_trip_s=0.01)
    offsets = kafka_only_store(kafka, clock, durable_release=False)
    started = clock()

    assert offsets.commit({TP: 347}) is False

    assert kafka.attempts == 1
    assert clock() - started < 0.2  # no backoff slept: the worker is free for the assignment
    assert offsets.commit({TP: 347}) is True  # the next commit, after the assignment, stores it
    assert kafka.stored == {TP: 347}


def test_a_durable_release_still_retries_through_a_rebalance() -> None:
    clock = FakeClock()
    kafka = RefusingKafka(clock, refusals=3, generation_moved=True, round_trip_s=0.01)
    offsets = kafka_only_store(kafka, clock, durable_release=True)

    assert offsets.commit({TP: 12}, releasing=True) is True

    assert kafka.attempts == 4
    assert kafka.stored == {TP: 12}


def test_pykafka_commits_go_generation_less_when_the_member_is_between_generations() -> None:
    clock = FakeClock()
    member = RefusingKafka(clock, refusals=1, generation_moved=True, round_trip_s=0.01)
    simple = RefusingKafka(clock, refusals=0, generation_moved=True, round_trip_s=0.01)

    assert member_or_simple_commit(member.commit, simple.commit, clock)({TP: 9}, 10.0) == {TP}
    assert simple.stored == {TP: 9}


def test_a_release_refused_for_the_generation_is_retried() -> None:
    clock = FakeClock()
    kafka = RefusingKafka(clock, refusals=2, generation_moved=True, round_trip_s=0.01)
    offsets = kafka_only_store(kafka, clock, durable_release=False)

    assert offsets.commit({TP: 5}, releasing=True) is True

    assert kafka.attempts == 3


@given(
    attempt=st.integers(min_value=0, max_value=10),
    now=st.floats(min_value=0, max_value=20),
    releasing=st.booleans(),
)
def test_a_refusal_for_the_generation_of_a_commit_releasing_nothing_is_never_retried(
    attempt: int, now: float, releasing: bool
) -> None:
    assert not retries_left(attempt, 5, now, 0.2, 10.0, releasing=releasing, generation_moved=True)
