"""The one meeting point of the fetcher, the application's stream threads and the rebalance worker.

A record may be handed to an application thread only while its partition is open at the epoch it was
fetched under and the ZooKeeper connection is not suspended. The worker revokes partitions here and
waits until no thread still holds a record of them: that is what "let in-flight processing finish"
means, and it is why ownership can then be given up without two threads processing one partition.
All shared state of that handshake lives in this class, under its one condition variable.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from migrator.assign.model import TopicPartition
from migrator.consumer.message import Message

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Envelope:
    """A fetched record on its way to a stream, stamped with the epoch its partition was opened at."""

    message: Message
    epoch: int


class Handoff:
    def __init__(self, on_take: Callable[[], None] | None = None) -> None:
        self._on_take = on_take
        self._cond = threading.Condition()
        self._epochs: dict[TopicPartition, int] = {}
        self._next_epoch = 1
        self._held: dict[int, Message] = {}  # stream key -> record handed out and not yet processed
        self._holder_thread: dict[int, int] = {}  # stream key -> ident of the thread that took it
        self._processed: dict[TopicPartition, int] = {}  # next offset after the last processed record
        self._suspended = False
        self._closed = False

    # -- the worker's side ---------------------------------------------------------------------------
    def open(self, start_offsets: Mapping[TopicPartition, int]) -> int:
        """Open partitions for hand-out at a fresh epoch, each starting at its fetch offset."""
        with self._cond:
            epoch = self._next_epoch
            self._next_epoch += 1
            for tp, offset in start_offsets.items():
                self._epochs[tp] = epoch
                self._processed[tp] = offset
            self._cond.notify_all()
            return epoch

    def revoke(self, tps: Collection[TopicPartition], wait_s: float, warn_every_s: float = 10.0) -> None:
        """Stop handing out `tps` and wait (up to `wait_s`) until no thread holds one of their records.

        A record still held after `wait_s` is abandoned: it is not counted processed, so the next owner gets it
        again. That bounds a rebalance when an application thread stopped iterating with a record in hand.
        """
        revoked = set(tps)
        with self._cond:
            for tp in revoked:
                self._epochs.pop(tp, None)
            self._cond.notify_all()
            started = time.monotonic()
            while True:
                held = [k for k, m in self._held.items() if m.topic_partition in revoked]
                if not held:
                    return
                waited = time.monotonic() - started
                if waited >= wait_s:
                    for key in held:
                        message = self._held.pop(key)
                        self._holder_thread.pop(key, None)
                        log.warning("abandoning in-flight record %s@%d after %.0fs; its next owner gets it again",
                                    message.topic_partition, message.offset, waited)
                    return
                if not self._cond.wait(timeout=min(warn_every_s, wait_s - waited)):
                    log.warning("rebalance waits %.0fs for in-flight records of %s", time.monotonic() - started,
                                ", ".join(sorted(str(self._held[k].topic_partition) for k in held)))

    def forget(self, tps: Collection[TopicPartition]) -> None:
        """Drop the processed positions of partitions no longer owned (after their final commit)."""
        with self._cond:
            for tp in tps:
                if tp not in self._epochs:
                    self._processed.pop(tp, None)

    def processed(self) -> dict[TopicPartition, int]:
        with self._cond:
            return dict(self._processed)

    def suspend(self) -> None:
        """ZooKeeper connection suspended: owner nodes may be expiring, so hand out nothing."""
        with self._cond:
            self._suspended = True

    def resume(self) -> None:
        with self._cond:
            self._suspended = False
            self._cond.notify_all()

    @property
    def suspended(self) -> bool:
        return self._suspended

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._epochs.clear()
            self._cond.notify_all()

    # -- the stream threads' side --------------------------------------------------------------------
    def take(self, stream_key: int, envelope: Envelope, timeout_s: float | None = None) -> bool:
        """Hand a record to the calling thread if its partition is still open at its epoch.

        While suspended, waits (up to `timeout_s`) for the connection to come back or the partition to be
        revoked. Returns False when the record must be dropped (or the wait timed out).
        """
        tp = envelope.message.topic_partition
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cond:
            while True:
                if self._closed or self._epochs.get(tp) != envelope.epoch:
                    return False
                if not self._suspended:
                    self._held[stream_key] = envelope.message
                    self._holder_thread[stream_key] = threading.get_ident()
                    if self._on_take is not None:
                        self._on_take()
                    return True
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(timeout=remaining)

    def done(self, stream_key: int) -> None:
        """The thread asked for its next record: the one it held is processed."""
        with self._cond:
            self._mark_processed(stream_key)

    def done_for_current_thread(self) -> None:
        """`commit_offsets()` marks the calling thread's held records processed."""
        me = threading.get_ident()
        with self._cond:
            for key in [k for k, ident in self._holder_thread.items() if ident == me]:
                self._mark_processed(key)

    def _mark_processed(self, stream_key: int) -> None:
        message = self._held.pop(stream_key, None)
        self._holder_thread.pop(stream_key, None)
        if message is None:
            return
        tp = message.topic_partition
        if self._processed.get(tp, -1) < message.offset + 1:
            self._processed[tp] = message.offset + 1
        self._cond.notify_all()
