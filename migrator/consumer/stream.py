"""A `KafkaStream`: the iterator one application thread drains, as in the Scala connector."""

from __future__ import annotations

import asyncio
import itertools
import logging
import operator
import queue
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Collection, Iterator
from typing import Any, Protocol

from migrator.consumer.aio import AsyncRecords
from migrator.consumer.fork import ForkGuard, watch_fork
from migrator.consumer.handoff import Handoff, Holder
from migrator.errors import MigratorError
from migrator.protocol.message import Chunk, Message
from migrator.protocol.partition import TopicPartition

log = logging.getLogger(__name__)
_SHUTDOWN = object()
_WAKE = object()  # look at the handoff again (the connector failed)
DEFAULT_QUEUE_CHUNKS = 64


class ConsumerTimeout(MigratorError):
    """No record arrived within `consumer.timeout.ms`; iterating again continues."""


class RecordSource(Protocol):
    """Where a stream with nothing queued fetches for itself ("caller runs"; see `Fetcher.fetch_for`)."""

    def fetch_for(self, stream: KafkaStream, timeout_s: float) -> list[Chunk] | None: ...

    def waiting(self, delta: int) -> None: ...


class KafkaStream:
    """Yields `Message`s of the partitions its thread owns.

    Asking for the next record marks the previous one processed; that processed position is what the
    connector commits. Everything the worker may look at (the held record, the positions) is read and changed
    only under `lock`, which only this stream's thread and, during a release, the worker ever take.

    The per-record path is C alone: iterating a stream iterates `itertools.chain.from_iterable` over a list
    iterator per chunk, and Python (`_chunks`) runs once per chunk, under `lock`, to check the chunk's epoch
    and that hand-out is not suspended. How far a chunk was handed out is read from its list iterator; the
    record before that point is the one in hand. To stop a chunk (revoke, suspend, close) the handoff calls
    `halt` under `lock`: it drains the list iterator in one C call, so the thread can take no further record
    of it and the next one goes through `_chunks` again.
    """

    def __init__(self, thread_id: str, handoff: Handoff, consumer_timeout_ms: int = -1,
                 queue_chunks: int = DEFAULT_QUEUE_CHUNKS) -> None:  # fmt: skip
        self.thread_id = thread_id
        self.queue: queue.SimpleQueue[object] = queue.SimpleQueue()  # the fetcher keeps it to `queue_chunks`
        self.queue_chunks = queue_chunks
        self.room = threading.Event()  # set when a chunk is taken while the fetcher waits for room (`wants_room`)
        self.wants_room = False
        self._mutex = threading.RLock()  # re-entrant: `shutdown()` may run in a signal handler on this thread
        self.lock = threading.Condition(self._mutex)
        self.waited_on = False  # set by a revoke waiting for our held record, so only then do we notify
        self._handoff = handoff
        self._epochs = handoff.epochs
        self._timeout_s = None if consumer_timeout_ms < 0 else consumer_timeout_ms / 1000.0
        # the current chunk (or what was left of it after a halt) and the iterator the chain hands it out from
        self._messages: list[Message] = []
        self._it: Iterator[Message] | None = None  # None once halted: then `_handed` is fixed
        self._handed = 0
        self._settled = 0  # records before this index are processed even if handed last (commit_offsets)
        self._rest: list[Message] | None = None  # what a halt left over, handed out after a new check
        self._tp: TopicPartition | None = None
        self._epoch = 0
        self._holder: Holder | None = None  # the thread (or asyncio task) processing the current chunk
        self._positions: dict[TopicPartition, int] = {}  # of chunks done with; the current one is derived
        self._local: deque[Chunk] = deque()  # chunks this thread fetched for itself, ahead of the queue
        self._source: RecordSource | None = None
        self._chain: Iterator[Message] | None = None
        self._shut = False
        self._fork = ForkGuard("stream")
        handoff.register(self)
        watch_fork(self)

    def attach(self, source: RecordSource) -> None:
        """Let this stream fetch for itself when nothing is queued for it (set before iteration starts)."""
        self._source = source

    def __iter__(self) -> Iterator[Message]:
        """A fresh iteration: the record in hand from an earlier one counts as processed. Leaving it (break,
        return or an exception: the iterator is dropped) decides nothing: the record stays in hand until the
        thread asks for another one, calls `done()`, commits, shuts down or ends (see `held`)."""
        self._fork.check()
        return itertools.chain.from_iterable(self._chunks())

    def __next__(self) -> Message:
        chain = self._chain
        if chain is None:  # `next(stream)` without `iter`: one iteration for the stream's life
            chain = self._chain = iter(self)
        return next(chain)

    def aiter(self) -> AsyncIterator[Message]:
        """`async for m in stream.aiter()`: this stream for an asyncio task (see `migrator.consumer.aio`)."""
        self._fork.check()
        return AsyncRecords(self)

    def done(self) -> None:
        """The record in hand is processed: a commit from now on includes it, and a rebalance does not wait
        for it. For a thread that finishes a record and then does something slow before asking for the next."""
        self._fork.check()
        with self._mutex:
            self._settled = self._handed_out()
            if self.waited_on:
                self.lock.notify_all()

    # -- once per chunk --------------------------------------------------------------------------------
    def _chunks(self) -> Iterator[Iterator[Message]]:
        """One iterator per chunk for the chain: the previous chunk is used up (or halted), so every record
        handed out of it is processed; check the next one and start handing it out.

        An error (`ConsumerTimeout`, or the connector's failure) is handed to the chain as an iterator that
        raises it: `itertools.chain` passes an exception of its current iterator through and stays usable,
        while one from this generator would end it, and with it the application's `for` loop (as Scala's
        `ConsumerIterator`, an iterator continues after a timeout). When the chain is dropped (the thread left
        its loop), Python closes this generator: nothing more of the current chunk is handed out, and the
        record in hand stays in hand (see `__iter__`).
        """
        with self._mutex:
            self.halt(None)  # an earlier iteration may have stopped inside a chunk: continue after its record
        try:
            while True:
                try:
                    it = self._next_iterator(None if self._timeout_s is None else time.monotonic() + self._timeout_s)
                except Exception as exc:
                    yield _raising(exc)
                    continue
                if it is None:
                    return
                yield it
        finally:
            with self._mutex:
                self.halt(None)  # a later iteration continues after the record in hand

    def _next_iterator(self, deadline: float | None) -> Iterator[Message] | None:
        self._fork.check()  # before any lock: in a forked child one may be held by a thread that is not there
        while True:
            suspended = False
            with self._mutex:
                self._settle()
                if self._handoff.failure is not None:
                    raise self._handoff.failure
                rest = self._rest
                if rest:
                    if self._epochs.get(self._chunk_tp()) != self._epoch:
                        self._rest = None  # closed or re-opened since it was fetched: drop it
                    elif self._handoff.suspended or self._epoch in self._handoff.gated:
                        suspended = True
                    else:
                        self._rest = None
                        self._messages, self._handed, self._settled = rest, 0, 0
                        self._it = it = iter(rest)
                        return it
            if self._shut:
                return None
            if suspended:
                if not self._handoff.wait_resumed(_remaining(deadline), self._epoch):
                    raise ConsumerTimeout(f"no record for {self.thread_id} within consumer.timeout.ms")
                continue
            item = self._take(deadline)
            if item is _SHUTDOWN:
                self._shut = True
                return None
            if item is _WAKE:
                continue
            assert isinstance(item, Chunk)
            with self._mutex:
                self._rest, self._tp, self._epoch = item.messages, item.tp, item.epoch
                self._holder = threading.current_thread()  # an asyncio iterator hands it to its task
            if self._handoff.on_take is not None:
                self._handoff.on_take(len(item.messages))

    def _settle(self) -> None:
        """The chain asks for more: every record handed out of the current chunk is processed (under `lock`)."""
        handed = self._handed_out()
        if handed:
            self._positions[self._chunk_tp()] = self._messages[handed - 1].offset + 1
            if self.waited_on:
                self.lock.notify_all()
        self._messages, self._it, self._handed, self._settled = [], None, 0, 0

    def _chunk_tp(self) -> TopicPartition:
        """The partition of the current chunk: set with it, so always there while its records are handed out."""
        if self._tp is None:
            raise RuntimeError("records handed out without a chunk")  # a bug, never an operator's mistake
        return self._tp

    def _handed_out(self) -> int:
        """How many records of the current chunk were handed out (under `lock`; the chain may be taking one
        right now, which is why a reader that must see a stable value halts first)."""
        it = self._it
        if it is None:
            return self._handed
        return len(self._messages) - operator.length_hint(it)

    def _take(self, deadline: float | None) -> object:
        """The next chunk: one fetched here before, a queued one, one fetched now, or one the fetch thread
        delivers while this thread waits (when nothing came within a short poll, another thread is polling, or
        a routing change is pending)."""
        while True:
            if self._local:
                return self._local.popleft()
            if not self.queue.empty():  # only this thread takes from it
                item = self.queue.get_nowait()
                if self.wants_room:  # only a full queue is taken from here while the fetcher waits
                    self.wants_room = False
                    self.room.set()
                return item
            remaining = _remaining(deadline)
            if remaining == 0.0:
                raise ConsumerTimeout(f"no record for {self.thread_id} within consumer.timeout.ms")
            source = self._source
            if source is not None:
                fetched = source.fetch_for(self, FETCH_WAIT_S if remaining is None else min(remaining, FETCH_WAIT_S))
                if fetched:
                    self._local.extend(fetched)
                    continue
                # Nothing came within a short wait (or the fetch thread is polling): wait on the queue, woken by
                # a chunk, a wake-up or shutdown, while the fetch thread polls with a long wait. Polling again
                # here would wake this thread every `FETCH_WAIT_S` for nothing.
                source.waiting(1)  # the fetch thread polls while any stream waits
            try:
                return self.queue.get(timeout=remaining)
            except queue.Empty:
                raise ConsumerTimeout(f"no record for {self.thread_id} within consumer.timeout.ms") from None
            finally:
                if source is not None:
                    source.waiting(-1)

    # -- the handoff's side (callers hold `lock` where noted) ----------------------------------------
    def held(self) -> Message | None:
        """The record a thread (or asyncio task) is processing now: handed out, not yet done, and its thread
        alive (a thread that ended is done with it; one ended by an exception put it back first, see
        `put_back`). A task's record stays held until `_task_ended` decided what its end means."""
        handed = self._handed_out()
        if handed <= self._settled:
            return None
        holder = self._holder
        if isinstance(holder, threading.Thread) and not holder.is_alive():
            return None
        return self._messages[handed - 1]

    def halt(self, tps: Collection[TopicPartition] | None, keep: bool = True) -> None:
        """Hand out nothing more of the current chunk if it is of `tps` (None: whatever it is) until it is
        checked again; `keep` the rest for that check (under `lock`)."""
        it = self._it
        if it is None or (tps is not None and self._tp not in tps):
            return
        rest = list(it)  # one C call: the chain cannot take a record between counting and stopping
        self._handed = len(self._messages) - len(rest)
        self._it = None
        if keep and rest:
            self._rest = rest + (self._rest or [])

    def abandon(self) -> None:
        """Drop the held record without counting it processed, and the rest of its chunk (under `lock`)."""
        self.halt(None, keep=False)
        if self._handed > self._settled:
            self._handed -= 1  # the held record is not processed
            self._settled = self._handed
            self._settle()
            self._rest = None

    def put_back(self, holder: Holder) -> None:
        """`holder` failed while processing its record in hand: the record is not processed, and it is the
        next one this stream hands out (under `lock`)."""
        if self._holder is not holder:
            return
        self.halt(None)
        if self._handed > self._settled:
            self._handed -= 1
            self._rest = [self._messages[self._handed], *(self._rest or ())]
            self._settled = self._handed

    def positions(self) -> dict[TopicPartition, int]:
        out = dict(self._positions)
        handed = self._handed_out()
        done = handed - 1 if self.held() is not None else handed
        if done > 0:
            out[self._chunk_tp()] = self._messages[done - 1].offset + 1
        return out

    def reset(self, tps: Collection[TopicPartition]) -> None:
        with self.lock:
            if self._tp in tps:  # a chunk of a partition being (re)opened or forgotten is stale: drop it
                self.halt(None, keep=False)
                self._messages, self._it, self._handed, self._settled, self._rest = [], None, 0, 0, None
            for tp in tps:
                self._positions.pop(tp, None)

    def finish_if_held_by(self, holder: Holder) -> None:
        with self.lock:
            if self._holder is holder and self.held() is not None:
                self._settled = self._handed_out()
                self.lock.notify_all()

    def hand_to(self, task: asyncio.Future[Any]) -> None:
        """The record just handed out is processed by `task` (an asyncio task), not by the thread that took
        it from the chain for it."""
        with self.lock:
            if self._holder is not task:
                task.add_done_callback(self._task_ended)
            self._holder = task

    def _task_ended(self, task: asyncio.Future[Any]) -> None:
        """A task that ended with a record in hand: processed if it returned; put back if it raised or was
        cancelled (the record is handed out again, as for a thread that died)."""
        failure = None if task.cancelled() else task.exception()
        with self.lock:
            if self._holder is not task or self.held() is None:
                return
            if task.cancelled() or failure is not None:
                log.warning("%s: the task processing %s ended %s; the record is handed out again", self.thread_id,
                            self.held(), "cancelled" if failure is None else f"by {failure!r}")  # fmt: skip
                self.put_back(task)
            else:
                self._settled = self._handed_out()
            self.lock.notify_all()

    def after_fork_in_child(self) -> None:
        """In a forked child: fresh locks (the parent's threads that may hold them are not here), and nothing
        more of the current chunk, so the next record goes through the fork check."""
        self._mutex = threading.RLock()
        self.lock = threading.Condition(self._mutex)
        it = self._it
        if it is not None:
            self._it = None
            self._handed = len(self._messages) - len(list(it))

    def shutdown(self) -> None:
        """Wake the thread and end its iteration."""
        self._shut = True
        self._put(_SHUTDOWN)

    def wake(self) -> None:
        """Make a thread waiting for records look at the handoff again."""
        self._put(_WAKE)

    def _put(self, signal: object) -> None:
        self.queue.put(signal)  # unbounded: a signal never waits for room behind chunks


FETCH_WAIT_S = 0.1  # how long a stream fetching for itself waits for a first record before it waits on its queue


def _raising(exc: Exception) -> Iterator[Message]:
    raise exc
    yield  # a generator: the chain takes it as its next iterator, and it raises when asked for a record


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())
