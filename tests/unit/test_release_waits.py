"""A release waits only for records of the partitions it releases (docs/application.md, "Slow records")."""

from __future__ import annotations

import logging
import threading

import pytest

from migrator.consumer.handoff import Handoff
from migrator.consumer.stream import KafkaStream
from migrator.protocol.message import Chunk, Message
from migrator.protocol.partition import TopicPartition as TP

P0, P1 = TP("t", 0), TP("t", 1)


def holding_p0_with_p1_queued() -> tuple[Handoff, KafkaStream, threading.Event, threading.Thread]:
    """Thread 0 is processing record 0@0 (until `finish` is set); partition 1 is open on the same stream."""
    h = Handoff()
    s = KafkaStream("a-0", h, consumer_timeout_ms=100)
    epoch = h.open({P0: 0, P1: 0})
    s.queue.put(Chunk(P0, epoch, [Message("t", 0, o, None, b"v", 0, "a-0") for o in range(3)]))
    s.queue.put(Chunk(P1, epoch, [Message("t", 1, o, None, b"v", 0, "a-0") for o in range(3)]))
    taken, finish = threading.Event(), threading.Event()

    def work() -> None:
        it = iter(s)
        next(it)
        taken.set()
        finish.wait(10)
        s.done()

    thread = threading.Thread(target=work)
    thread.start()
    taken.wait(10)
    return h, s, finish, thread


def test_moving_a_partition_does_not_wait_for_a_slow_record_of_another(caplog: pytest.LogCaptureFixture) -> None:
    h, _, finish, thread = holding_p0_with_p1_queued()
    assert h.in_hand([P0, P1]) == {P0}
    with caplog.at_level(logging.INFO, logger="migrator.consumer.handoff"):
        h.revoke([P1], wait_s=30)  # returns at once: p0's record is not p1's
    assert not caplog.records
    finish.set()
    thread.join()


def test_releasing_the_slow_record_s_partition_waits_with_a_warning_then_abandons_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h, _, finish, thread = holding_p0_with_p1_queued()
    with caplog.at_level(logging.WARNING, logger="migrator.consumer.handoff"):
        h.revoke([P0], wait_s=1.2)
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("release of t-0 waits for a-0" in m for m in messages), messages
    assert any("abandoning in-flight record t-0@0" in m for m in messages), messages
    assert h.processed()[P0] == 0  # abandoned: not processed
    finish.set()
    thread.join()
