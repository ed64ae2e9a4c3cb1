"""The handoff: records are handed out only for open partitions at their epoch, never while suspended,
and a revoke waits for in-flight records."""

from __future__ import annotations

import threading
import time

from migrator.assign.model import TopicPartition as TP
from migrator.consumer.handoff import Envelope, Handoff
from migrator.consumer.message import Message


def env(offset: int, epoch: int, partition: int = 0) -> Envelope:
    return Envelope(Message("t", partition, offset, None, b"v", 0, "a-0"), epoch)


def test_records_of_an_old_epoch_or_a_closed_partition_are_dropped() -> None:
    h = Handoff()
    e1 = h.open({TP("t", 0): 5})
    assert h.take(1, env(5, e1))
    h.done(1)
    assert h.processed()[TP("t", 0)] == 6
    e2 = h.open({TP("t", 0): 6})
    assert not h.take(1, env(6, e1))  # fetched under the old epoch
    assert h.take(1, env(6, e2))
    assert not h.take(2, env(0, e2, partition=1))  # never opened


def test_nothing_is_handed_out_while_suspended() -> None:
    h = Handoff()
    e = h.open({TP("t", 0): 0})
    h.suspend()
    assert not h.take(1, env(0, e), timeout_s=0.05)
    h.resume()
    assert h.take(1, env(0, e), timeout_s=0.05)


def test_revoke_waits_for_the_in_flight_record_and_counts_it_processed() -> None:
    h = Handoff()
    e = h.open({TP("t", 0): 0})
    assert h.take(1, env(0, e))
    released = threading.Event()

    def revoke() -> None:
        h.revoke([TP("t", 0)], wait_s=5)
        released.set()

    threading.Thread(target=revoke).start()
    time.sleep(0.1)
    assert not released.is_set()  # the thread still processes offset 0
    h.done(1)
    assert released.wait(2)
    assert h.processed()[TP("t", 0)] == 1
    assert not h.take(1, env(1, e))


def test_revoke_abandons_a_record_held_past_the_wait() -> None:
    h = Handoff()
    e = h.open({TP("t", 0): 0})
    assert h.take(1, env(0, e))
    h.revoke([TP("t", 0)], wait_s=0.05)
    assert h.processed()[TP("t", 0)] == 0  # not counted processed: the next owner gets it again
