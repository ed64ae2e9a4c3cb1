"""`stream.aiter()` for asyncio tasks, and use after `os.fork()`: the pure hand-out rules, without a cluster
(tests/integration/test_app_asyncio_fork.py runs both as applications)."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from migrator.consumer.fork import UsedAfterFork
from migrator.consumer.handoff import Handoff
from migrator.consumer.stream import ConsumerTimeout, KafkaStream
from migrator.protocol.message import Chunk, Message
from migrator.protocol.partition import TopicPartition as TP

P0 = TP("t", 0)


def opened(*offsets: int) -> tuple[Handoff, KafkaStream]:
    h = Handoff()
    s = KafkaStream("a-0", h, consumer_timeout_ms=100)
    e = h.open({P0: offsets[0]})
    s.queue.put(Chunk(P0, e, [Message("t", 0, o, None, b"v", 0, "a-0") for o in offsets]))
    return h, s


def test_a_commit_from_the_task_counts_its_record_though_another_thread_took_it() -> None:
    h, s = opened(0, 1, 2)

    async def main() -> int:
        async for m in s.aiter():
            if m.offset == 1:
                h.done_for_current_thread()  # what commit_offsets() does first, on the loop's thread
                return h.processed()[P0]
        return -1

    assert asyncio.run(main()) == 2


def test_asking_for_the_next_record_counts_the_previous_one_and_the_iterator_survives_a_timeout() -> None:
    h, s = opened(0, 1)

    async def main() -> list[int]:
        records = s.aiter()
        seen = [(await anext(records)).offset, (await anext(records)).offset]
        with pytest.raises(ConsumerTimeout):
            await anext(records)
        return [*seen, h.processed()[P0]]

    assert asyncio.run(main()) == [0, 1, 2]


def test_a_task_that_raises_with_a_record_in_hand_puts_it_back() -> None:
    h, s = opened(0, 1, 2)

    async def work() -> None:
        async for m in s.aiter():
            if m.offset == 1:
                raise RuntimeError("processing failed")

    async def main() -> None:
        with pytest.raises(RuntimeError):
            await asyncio.create_task(work())
        await asyncio.sleep(0)  # the task's done callbacks

    asyncio.run(main())
    assert h.processed()[P0] == 1
    assert s.held() is None  # a release does not wait for it
    assert next(iter(s)).offset == 1


def test_a_cancelled_wait_for_a_record_loses_nothing() -> None:
    h = Handoff()
    s = KafkaStream("a-0", h)
    e = h.open({P0: 0})

    async def main() -> int:
        records = s.aiter()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(anext(records), 0.2)  # nothing queued yet: the take goes on
        s.queue.put(Chunk(P0, e, [Message("t", 0, 0, None, b"v", 0, "a-0")]))
        m = await anext(records)
        s.shutdown()
        with pytest.raises(StopAsyncIteration):
            await anext(records)
        return m.offset

    assert asyncio.run(main()) == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_child_gets_used_after_fork_at_once_from_iteration_and_done() -> None:
    _, s = opened(0, 1, 2)
    it = iter(s)
    next(it)
    held = threading.Event()  # a lock held by a thread at fork time must not hang the child
    release = threading.Event()

    def hold() -> None:
        with s.lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    pid = os.fork()
    if pid == 0:  # the child: exit code 0 only if each call raised UsedAfterFork
        code = 0
        for call in (lambda: next(it), lambda: next(iter(s)), s.done):
            try:
                call()
                code = 1
            except UsedAfterFork:
                pass
            except BaseException:
                code = 2
        os._exit(code)
    release.set()
    holder.join()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert next(it).offset == 1  # the parent goes on
