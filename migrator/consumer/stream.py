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
        self.lock = threading.Condition()
        self._handoff = handoff
        self._timeout_s = None if consumer_timeout_ms < 0 else consumer_timeout_ms / 1000.0
        self._chunk: Chunk | None = None
        self._pos = 0
        self._held: Message | None = None
        self._holder = 0
        self._positions: dict[TopicPartition, int] = {}
        self._shut = False
        handoff.register(self)

    def __iter__(self) -> KafkaStream:
        return self

    def __next__(self) -> Message:
        deadline = None if self._timeout_s is None else time.monotonic() + self._timeout_s
        while True:
            suspended = False
            with self.lock:
                self._finish()
                chunk = self._chunk
                if chunk is not None and self._pos < len(chunk.messages):
                    if self._handoff.epochs.get(chunk.tp) != chunk.epoch:
                        self._chunk = None  # closed or re-opened since it was fetched: drop the rest
                    elif self._handoff.suspended:
                        suspended = True
                    else:
                        message = chunk.messages[self._pos]
                        self._pos += 1
                        self._held = message
                        self._holder = threading.get_ident()
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
            with self.lock:
                self._chunk, self._pos = item, 0
            if self._handoff.on_take is not None:
                self._handoff.on_take(len(item.messages))

    def _finish(self) -> None:
        """The held record is processed (called under `lock`)."""
        held = self._held
        if held is not None:
            self._held = None
            self._positions[TopicPartition(held.topic, held.partition)] = held.offset + 1
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
