"""The handoff and the stream: records are handed out only for open partitions at their epoch, never while
suspended, and a revoke waits for the in-flight record (or abandons it after its wait)."""

from __future__ import annotations

import threading
import time

import pytest

from migrator.consumer.handoff import Handoff
from migrator.consumer.stream import ConsumerTimeout, KafkaStream
from migrator.protocol.message import Chunk, Message
from migrator.protocol.partition import TopicPartition as TP


def chunk(epoch: int, *offsets: int, partition: int = 0) -> Chunk:
    return Chunk(TP("t", partition), epoch, [Message("t", partition, o, None, b"v", 0, "a-0") for o in offsets])


def setup(timeout_ms: int = 200) -> tuple[Handoff, KafkaStream]:
    h = Handoff()
    return h, KafkaStream("a-0", h, consumer_timeout_ms=timeout_ms)


def test_asking_for_the_next_record_marks_the_previous_processed() -> None:
    h, s = setup()
    e = h.open({TP("t", 0): 5})
    s.queue.put(chunk(e, 5, 6))
    assert next(s).offset == 5
    assert h.processed()[TP("t", 0)] == 5  # 5 is in hand, not processed
    assert next(s).offset == 6
    assert h.processed()[TP("t", 0)] == 6
    with pytest.raises(ConsumerTimeout):
        next(s)
    assert h.processed()[TP("t", 0)] == 7


def test_records_of_an_old_epoch_or_a_closed_partition_are_dropped() -> None:
    h, s = setup()
    e1 = h.open({TP("t", 0): 0})
    e2 = h.open({TP("t", 0): 0})
    s.queue.put(chunk(e1, 0, 1))  # fetched before the re-open
    s.queue.put(chunk(e2, 0))
    s.queue.put(chunk(e2, 3, partition=1))  # never opened
    assert [next(s).offset] == [0]
    with pytest.raises(ConsumerTimeout):
        next(s)


def test_nothing_is_handed_out_while_suspended() -> None:
    h, s = setup(timeout_ms=100)
    e = h.open({TP("t", 0): 0})
    s.queue.put(chunk(e, 0))
    h.suspend()
    with pytest.raises(ConsumerTimeout):
        next(s)
    h.resume()
    assert next(s).offset == 0


def test_revoke_waits_for_the_in_flight_record_and_nothing_follows_it() -> None:
    h, s = setup()
    e = h.open({TP("t", 0): 0})
    s.queue.put(chunk(e, 0, 1, 2))
    assert next(s).offset == 0
    released = threading.Event()
    threading.Thread(target=lambda: (h.revoke([TP("t", 0)], wait_s=5), released.set())).start()
    time.sleep(0.1)
    assert not released.is_set()  # the thread still processes offset 0
    with pytest.raises(ConsumerTimeout):
        next(s)  # marks 0 processed; 1 and 2 belong to a revoked partition
    assert released.wait(2)
    assert h.processed()[TP("t", 0)] == 1


def test_revoke_abandons_a_record_held_past_the_wait() -> None:
    h, s = setup()
    e = h.open({TP("t", 0): 0})
    s.queue.put(chunk(e, 0))
    next(s)
    h.revoke([TP("t", 0)], wait_s=0.05)
    assert h.processed()[TP("t", 0)] == 0  # not counted processed: the next owner gets it again


def test_commit_from_the_holding_thread_counts_its_record() -> None:
    h, s = setup()
    e = h.open({TP("t", 0): 0})
    s.queue.put(chunk(e, 0))
    next(s)
    h.done_for_current_thread()
    assert h.processed()[TP("t", 0)] == 1
