"""A `KafkaStream`: the iterator one application thread drains, as in the Scala connector."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Collection

from migrator.assign.model import TopicPartition
from migrator.consumer.handoff import Chunk, Handoff
from migrator.consumer.message import Message
from migrator.errors import MigratorError

_SHUTDOWN = object()
DEFAULT_QUEUE_CHUNKS = 64


class ConsumerTimeout(MigratorError):
    """No record arrived within `consumer.timeout.ms`; iterating again continues."""


class KafkaStream:
    """Yields `Message`s of the partitions its thread owns.

    Asking for the next record marks the previous one processed; that processed position is what the
    connector commits. Everything the worker may look at (the held record, the positions) changes only under
    `lock`, which only this stream's thread and, during a release, the worker ever take.
    """

    def __init__(self, thread_id: str, handoff: Handoff, consumer_timeout_ms: int = -1,
                 queue_chunks: int = DEFAULT_QUEUE_CHUNKS) -> None:
        self.thread_id = thread_id
        self.queue: queue.Queue[object] = queue.Queue(maxsize=queue_chunks)
        self._mutex = threading.Lock()  # the per-record path takes the bare lock; waits use `lock`
        self.lock = threading.Condition(self._mutex)
        self.waited_on = False  # set by a revoke waiting for our held record, so only then do we notify
        self._handoff = handoff
        self._epochs = handoff.epochs
        self._timeout_s = None if consumer_timeout_ms < 0 else consumer_timeout_ms / 1000.0
        self._messages: list[Message] = []
        self._tp: TopicPartition | None = None
        self._epoch = 0
        self._pos = 0
        self._held: Message | None = None
        self._holder = 0
        self._positions: dict[TopicPartition, int] = {}
        self._shut = False
        handoff.register(self)

    def __iter__(self) -> KafkaStream:
        return self

    def __next__(self) -> Message:
        with self._mutex:
            held = self._held
            if held is not None:  # the record in hand is processed: the hot path, kept inline
                self._held = None
                self._positions[self._tp] = held[2] + 1  # type: ignore[index]
                if self.waited_on:
                    self.lock.notify_all()
            pos = self._pos
            if pos < len(self._messages) and self._epochs.get(self._tp) == self._epoch and not self._handoff.suspended:
                message = self._messages[pos]
                self._pos = pos + 1
                self._held = message
                return message
        return self._slow_next()

    def _slow_next(self) -> Message:
        """The chunk is used up, stale, or hand-out is suspended: wait for what comes next."""
        deadline = None if self._timeout_s is None else time.monotonic() + self._timeout_s
        while True:
            suspended = False
            with self._mutex:
                if self._pos < len(self._messages):
                    if self._epochs.get(self._tp) != self._epoch:
                        self._messages = []  # closed or re-opened since it was fetched: drop the rest
                    elif self._handoff.suspended:
                        suspended = True
                    else:
                        message = self._messages[self._pos]
                        self._pos += 1
                        self._held = message
                        return message
            if self._shut:
                raise StopIteration
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if suspended:
                if not self._handoff.wait_resumed(remaining):
                    raise ConsumerTimeout(f"no record for {self.thread_id} within consumer.timeout.ms")
                continue
            try:
                item = self.queue.get(timeout=remaining)
            except queue.Empty:
                raise ConsumerTimeout(f"no record for {self.thread_id} within consumer.timeout.ms") from None
            if item is _SHUTDOWN:
                self._shut = True
                raise StopIteration
            assert isinstance(item, Chunk)
            with self._mutex:
                self._messages, self._tp, self._epoch, self._pos = item.messages, item.tp, item.epoch, 0
                self._holder = threading.get_ident()
            if self._handoff.on_take is not None:
                self._handoff.on_take(len(item.messages))

    def _finish(self) -> None:
        """The held record is processed (called under `lock`)."""
        held = self._held
        if held is not None:
            self._held = None
            self._positions[self._tp] = held.offset + 1  # type: ignore[index]
            self.lock.notify_all()

    # -- the handoff's side (callers hold `lock` where noted) ----------------------------------------
    def held(self) -> Message | None:
        return self._held

    def abandon(self) -> None:
        """Drop the held record without counting it processed (under `lock`)."""
        self._held = None

    def positions(self) -> dict[TopicPartition, int]:
        return dict(self._positions)

    def reset(self, tps: Collection[TopicPartition]) -> None:
        with self.lock:
            for tp in tps:
                self._positions.pop(tp, None)

    def finish_if_thread(self, ident: int) -> None:
        with self.lock:
            if self._held is not None and self._holder == ident:
                self._finish()

    def shutdown(self) -> None:
        """Wake the thread and end its iteration (it may need room in a full queue first)."""
        self._shut = True
        while True:
            try:
                self.queue.put_nowait(_SHUTDOWN)
                return
            except queue.Full:
                with contextlib.suppress(queue.Empty):
                    self.queue.get_nowait()
