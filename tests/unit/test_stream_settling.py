"""When a record in hand counts as processed (docs/application.md): asking for the next one, `done()`, a
commit, the thread's end; and when it does not: leaving the loop alone, the thread's failure. Plus the
iterator across timeouts, the gate before `before_starting_fetchers`, and a failed connector."""

from __future__ import annotations

import contextlib
import threading

import pytest

from migrator.consumer import handoff
from migrator.consumer.handoff import Handoff
from migrator.consumer.stream import ConsumerTimeout, KafkaStream
from migrator.errors import ListenerError
from migrator.protocol.message import Chunk, Message
from migrator.protocol.partition import TopicPartition as TP

P0 = TP("t", 0)


def opened(*offsets: int, gated: bool = False) -> tuple[Handoff, KafkaStream]:
    h = Handoff()
    s = KafkaStream("a-0", h, consumer_timeout_ms=100)
    e = h.open({P0: offsets[0]}, gated=gated)
    s.queue.put(Chunk(P0, e, [Message("t", 0, o, None, b"v", 0, "a-0") for o in offsets]))
    return h, s


@pytest.mark.parametrize("leave", ["break", "return", "exception"])
def test_leaving_the_loop_decides_nothing_and_the_thread_end_counts_the_record(leave: str) -> None:
    """The same rule however the loop is left (no look at the caller's frame): the record stays in hand,
    so a release waits for the thread, until the thread ends normally."""
    h, s = opened(0, 1, 2)
    left = threading.Event()
    go_on = threading.Event()

    def loop() -> None:
        for m in s:
            if m.offset == 1:
                if leave == "exception":
                    raise LookupError("handled outside the loop")
                if leave == "return":
                    return
                break

    def work() -> None:
        with contextlib.suppress(LookupError):
            loop()
        left.set()
        go_on.wait(10)

    worker = threading.Thread(target=work)
    worker.start()
    left.wait(10)
    assert h.processed()[P0] == 1  # 1 is in hand
    go_on.set()
    h.revoke([P0], wait_s=10)  # waits until the thread ended
    worker.join()
    assert h.processed()[P0] == 2


def test_a_commit_after_break_counts_the_record_in_hand() -> None:
    h, s = opened(0, 1, 2)
    for m in s:
        if m.offset == 1:
            break
    h.done_for_current_thread()
    assert h.processed()[P0] == 2
    h.revoke([P0], wait_s=30)  # returns at once: nothing in hand


def test_a_later_loop_continues_after_the_record_it_left_with() -> None:
    _, s = opened(0, 1, 2)
    for _ in s:
        break
    assert next(iter(s)).offset == 1


def test_an_exception_leaves_the_record_in_flight_and_the_thread_failure_puts_it_back() -> None:
    h, s = opened(0, 1, 2)
    with pytest.raises(ValueError):
        for m in s:
            if m.offset == 1:
                raise ValueError("processing failed")
    assert h.processed()[P0] == 1  # 1 is not processed
    h.failed(threading.current_thread())
    assert h.processed()[P0] == 1
    assert next(iter(s)).offset == 1  # handed out again


def test_a_thread_that_ended_is_done_with_its_record() -> None:
    h, s = opened(0, 1)
    it = iter(s)
    worker = threading.Thread(target=lambda: next(it))
    worker.start()
    worker.join()
    h.revoke([P0], wait_s=30)
    assert h.processed()[P0] == 1


def test_a_thread_ended_by_an_exception_puts_its_record_back(monkeypatch: pytest.MonkeyPatch) -> None:
    h, s = opened(0, 1)

    def work() -> None:
        for _ in s:
            raise RuntimeError("bug")

    # the connector's hook, chained to a quiet one (pytest swaps threading.excepthook around each test)
    monkeypatch.setattr(handoff, "_previous_excepthook", lambda _args: None)
    monkeypatch.setattr(threading, "excepthook", handoff._on_thread_exception)
    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    assert h.processed()[P0] == 0
    assert next(iter(s)).offset == 0


def test_done_counts_the_record_in_hand() -> None:
    h, s = opened(0, 1)
    next(s)
    s.done()
    assert h.processed()[P0] == 1


def test_the_same_iterator_continues_after_a_timeout() -> None:
    h, s = opened(0)
    it = iter(s)
    assert next(it).offset == 0
    with pytest.raises(ConsumerTimeout):
        next(it)
    e = h.epochs[P0]
    s.queue.put(Chunk(P0, e, [Message("t", 0, 1, None, b"v", 0, "a-0")]))
    assert next(it).offset == 1


def test_nothing_of_a_gated_epoch_is_handed_out_until_ungated() -> None:
    h, s = opened(0, gated=True)
    with pytest.raises(ConsumerTimeout):
        next(s)
    h.ungate()
    assert next(s).offset == 0


def test_a_failed_connector_makes_every_iteration_raise_its_error() -> None:
    h, s = opened(0)
    it = iter(s)
    failure = ListenerError("before_releasing_partitions raised RuntimeError: bug")
    h.fail(failure)
    for _ in range(2):
        with pytest.raises(ListenerError):
            next(it)
