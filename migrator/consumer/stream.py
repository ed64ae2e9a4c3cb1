"""A `KafkaStream`: the iterator one application thread drains, as in the Scala connector."""

from __future__ import annotations

import contextlib
import queue
import time

from migrator.consumer.handoff import Envelope, Handoff
from migrator.consumer.message import Message
from migrator.errors import MigratorError

_SHUTDOWN = object()
DEFAULT_QUEUE_SIZE = 2000


class ConsumerTimeout(MigratorError):
    """No record arrived within `consumer.timeout.ms`; iterating again continues."""


class KafkaStream:
    """Yields `Message`s of the partitions its thread owns.

    Asking for the next record marks the previous one processed; that processed position is what the
    connector commits.
    """

    def __init__(self, thread_id: str, handoff: Handoff, consumer_timeout_ms: int = -1,
                 queue_size: int = DEFAULT_QUEUE_SIZE) -> None:
        self.thread_id = thread_id
        self.queue: queue.Queue[object] = queue.Queue(maxsize=queue_size)
        self._handoff = handoff
        self._timeout_s = None if consumer_timeout_ms < 0 else consumer_timeout_ms / 1000.0
        self._key = id(self)
        self._shut = False

    def __iter__(self) -> KafkaStream:
        return self

    def __next__(self) -> Message:
        self._handoff.done(self._key)
        if self._shut:
            raise StopIteration
        deadline = None if self._timeout_s is None else time.monotonic() + self._timeout_s
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                item = self.queue.get(timeout=remaining)
            except queue.Empty:
                raise ConsumerTimeout(f"no record for {self.thread_id} within consumer.timeout.ms") from None
            if item is _SHUTDOWN:
                self._shut = True
                raise StopIteration
            assert isinstance(item, Envelope)
            if self._handoff.take(self._key, item, timeout_s=remaining):
                return item.message

    def shutdown(self) -> None:
        """Wake the thread and end its iteration (it may need room in a full queue first)."""
        while True:
            try:
                self.queue.put_nowait(_SHUTDOWN)
                return
            except queue.Full:
                with contextlib.suppress(queue.Empty):
                    self.queue.get_nowait()
