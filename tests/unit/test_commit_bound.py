"""A Kafka commit holds the rebalance worker for a bounded time (the soak's "silent workers").

librdkafka's synchronous commit has no timeout of its own and retries while the group's coordinator loads, so
the embedded member's poll thread can stay in it for minutes. The worker that commits must still answer
ZooKeeper and mode events within seconds: a commit Kafka does not take in time counts as refused, and the
position is kept by `OffsetStore.remember`. Unit tests of the bounding logic only: the Kafka side is a fake
that never answers, on a hand-moved clock (OffsetStore) or a stand-in client (EmbeddedMember).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any, cast

import pytest
from kazoo.client import KazooClient

from migrator.coordination.offsets import OffsetStore
from migrator.kafka import member as member_module
from migrator.kafka.member import EmbeddedMember
from migrator.metrics import ConnectorMetrics
from migrator.protocol import stores
from migrator.protocol.partition import TopicPartition
from migrator.zk.paths import GroupPaths
from tests.helpers.coordination_fakes import FakeClock

TP = TopicPartition("t", 0)


class UnansweredKafka:
    """Kafka offsets whose commits are refused at once `refusals` times, then never answered: each later
    commit takes the whole `timeout_s` it is given (the clock moves by it) and is refused."""

    def __init__(self, clock: FakeClock, refusals: int = 0, refusal_s: float = 0.4) -> None:
        self.clock = clock
        self.refusals = refusals
        self.refusal_s = refusal_s
        self.timeouts: list[float] = []

    def commit(self, offsets: Mapping[TopicPartition, int], timeout_s: float) -> set[TopicPartition]:
        self.timeouts.append(timeout_s)
        if self.refusals:
            self.refusals -= 1
            self.clock.advance(self.refusal_s)  # COORDINATOR_LOAD_IN_PROGRESS after a round trip
        else:
            self.clock.advance(timeout_s)
        return set()

    def committed(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {}


def kafka_store(kafka: UnansweredKafka, clock: FakeClock, timeout_s: float, retries: int = 5) -> OffsetStore:
    return OffsetStore(
        cast(KazooClient, None),  # offsets in Kafka alone: ZooKeeper is not touched
        GroupPaths("g"),
        stores.OffsetStore.KAFKA,
        False,
        kafka,
        ConnectorMetrics("g", "c"),
        max_retries=retries,
        backoff_ms=200,
        commit_timeout_s=timeout_s,
        clock=clock,
        sleep=clock.advance,
    )


@pytest.mark.parametrize("refusals", [0, 3])
def test_a_commit_kafka_does_not_answer_holds_the_caller_at_most_the_commit_timeout(refusals: int) -> None:
    clock = FakeClock()
    kafka = UnansweredKafka(clock, refusals=refusals)
    store = kafka_store(kafka, clock, timeout_s=10.0)
    started = clock()

    assert store.commit({TP: 42}) is False

    assert clock() - started <= 10.0 + 1e-9  # not (1 + max_retries) waits of the member's own timeout
    assert len(kafka.timeouts) == refusals + 1  # the refusals were retried; the unanswered try used what was left
    assert store.fetch([TP]) == {TP: 42}  # refused, so kept: this member resumes where it stopped


def test_refusals_are_still_retried_max_retries_times_within_the_timeout() -> None:
    clock = FakeClock()
    kafka = UnansweredKafka(clock, refusals=100)
    store = kafka_store(kafka, clock, timeout_s=10.0, retries=5)

    assert store.commit({TP: 7}) is False

    assert len(kafka.timeouts) == 6
    assert all(t > 0 for t in kafka.timeouts)


class StandInConsumer:
    """Enough of confluent-kafka's Consumer for `EmbeddedMember` to be built and never polled."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.conf = conf


class SlowCommits:
    """Stands in for `member_commit_sync`: the first commit stays in 'librdkafka' until `release` is set."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls: list[dict[TopicPartition, int]] = []

    def __call__(self, consumer: object, offsets: Mapping[TopicPartition, int]) -> set[TopicPartition]:
        self.calls.append(dict(offsets))
        if len(self.calls) == 1:
            self.release.wait()
        return set(offsets)


@pytest.fixture
def member(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[EmbeddedMember, SlowCommits, threading.Event]]:
    """A member whose poll thread serves queued calls once `serving` is set, as `_run` does between polls."""
    commits = SlowCommits()
    monkeypatch.setattr(member_module, "Consumer", StandInConsumer)
    monkeypatch.setattr(member_module, "member_commit_sync", commits)
    m = EmbeddedMember({"client.id": "c"}, 100, lambda _event: None)
    serving, stop = threading.Event(), threading.Event()

    def poll_thread() -> None:
        serving.wait()
        while not stop.is_set():
            m._serve(0.02)

    m._thread = threading.Thread(target=poll_thread, daemon=True)
    m._thread.start()
    yield m, commits, serving
    commits.release.set()
    serving.set()
    stop.set()
    m._thread.join(5)


def test_a_commit_stuck_in_the_client_refuses_the_next_ones_at_once(
    member: tuple[EmbeddedMember, SlowCommits, threading.Event],
) -> None:
    m, commits, serving = member
    serving.set()

    t0 = time.monotonic()
    assert m.commit({TP: 1}, timeout_s=0.3) == set()
    assert time.monotonic() - t0 < 5.0

    t1 = time.monotonic()
    assert m.commit({TP: 2}, timeout_s=5.0) == set()  # refused without waiting, nothing queued behind it
    assert time.monotonic() - t1 < 0.5
    assert commits.calls == [{TP: 1}]

    commits.release.set()  # the coordinator answered at last
    deadline = time.monotonic() + 5.0
    while m._unanswered_commit is not None and not m._unanswered_commit.done() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert m.commit({TP: 3}, timeout_s=5.0) == {TP}
    assert commits.calls == [{TP: 1}, {TP: 3}]


def test_a_commit_given_up_before_the_poll_thread_took_it_never_runs(
    member: tuple[EmbeddedMember, SlowCommits, threading.Event],
) -> None:
    m, commits, serving = member
    commits.calls.append({})  # no commit of this test stays in the client
    assert m.commit({TP: 1}, timeout_s=0.2) == set()  # the poll thread is busy elsewhere: queued, given up

    serving.set()
    assert m.commit({TP: 2}, timeout_s=5.0) == {TP}
    assert commits.calls[1:] == [{TP: 2}]  # the older offset never lands after the newer one
