"""The first batch after partitions are opened goes out at once: the records that piled up while the
partitions changed hands are what a rebalance's pause waits for, and a busy trickle's wait to fill a batch
(`POLL_S`) would come on top of it. Against the real broker: a few records waiting in an opened partition
come out of one poll without that wait, and a trickle after them still waits to fill."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from migrator.consumer.handoff import Handoff
from migrator.consumer.stream import KafkaStream
from migrator.kafka import fetcher as fetcher_module
from migrator.kafka.fetcher import POLL_S, Fetcher, Route
from migrator.protocol.partition import TopicPartition
from tests.helpers.kafka import make_topic, produce

pytestmark = pytest.mark.integration

WAITING = 10  # records in the partition when it is opened: more than one, fewer than a busy batch's top-up
TRICKLE = 20  # records produced together afterwards: one fetch, which waits `POLL_S` to fill as before


def test_the_first_batch_after_an_assignment_does_not_wait_to_fill(
    cluster, unique_group, unique_topic, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_topic(cluster, unique_topic, 1)
    produce(cluster, unique_topic, [f"r{i}".encode() for i in range(WAITING)], partition=0)
    sleeps: list[float] = []
    monkeypatch.setattr(fetcher_module.time, "sleep", _noted_on_this_thread(sleeps, fetcher_module.time.sleep))
    fetcher = Fetcher(cluster.bootstrap_servers, unique_group)
    try:
        fetcher.connect([unique_topic], 10.0)
        stream = KafkaStream(f"{unique_group}_b-0", Handoff())
        fetcher.route({TopicPartition(unique_topic, 0): Route(stream, 1, 0)})
        first = _records(fetcher, stream)
        assert (first, sleeps) == (WAITING, [])
        produce(cluster, unique_topic, [f"t{i}".encode() for i in range(TRICKLE)], partition=0)  # one batch
        assert (_records(fetcher, stream), sleeps) == (TRICKLE, [POLL_S])
    finally:
        fetcher.close()


def _noted_on_this_thread(sleeps: list[float], sleep: Callable[[float], None]) -> Callable[[float], None]:
    """`time.sleep` that notes (instead of sleeping) only this thread's sleeps: the polls run here, and other
    threads of the process (clients of earlier tests) keep sleeping for real."""
    polling = threading.current_thread()

    def noted(seconds: float) -> None:
        if threading.current_thread() is polling:
            sleeps.append(seconds)
        else:
            sleep(seconds)

    return noted


def _records(fetcher: Fetcher, stream: KafkaStream) -> int:
    """Records of the next poll that returns any, polled on this thread as a stream does."""
    for _ in range(50):
        chunks = fetcher.fetch_for(stream, 0.2)
        if chunks:
            return sum(len(c.messages) for c in chunks)
    return 0
