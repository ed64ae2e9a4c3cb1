"""Where the fetcher, the application's stream threads and the rebalance worker meet.

A record may be handed to an application thread only while its partition is open at the epoch it was
fetched under and the ZooKeeper connection is not suspended. The worker closes partitions here and then
waits until no stream still holds one of their records: that is "let in-flight processing finish", and
it is why ownership can be given up without two threads processing one partition.

Records travel in chunks (one partition, one epoch) so the per-record path is a few attribute operations
under the stream's own, uncontended lock. Each stream checks a chunk's epoch under its lock before it hands
its first record out, and keeps handing its records out without further checks only until the handoff
halts it; the worker closes the epoch and then halts every stream under its lock, so once `revoke`
returns no record of a revoked partition can be handed out (the same holds for `suspend` and `close`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Protocol, TypeAlias

from migrator.protocol.message import Message
from migrator.protocol.partition import TopicPartition

log = logging.getLogger(__name__)
RECHECK_S = 0.05  # how often a release waiting for a record looks whether its thread ended
TELL_AFTER_S = 1.0  # a release waiting longer than this for a record says so (once)


Holder: TypeAlias = "threading.Thread | asyncio.Future[Any]"
"""Who processes a record in hand: an application thread, or an asyncio task (`KafkaStream.aiter`)."""


def current_holders() -> list[Holder]:
    """The calling thread, and the asyncio task running on it, if any."""
    holders: list[Holder] = [threading.current_thread()]
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop runs on this thread
        task = None
    if task is not None:
        holders.append(task)
    return holders


class HandoffStream(Protocol):
    """What the handoff needs of a stream (see `KafkaStream`)."""

    lock: threading.Condition
    waited_on: bool

    def held(self) -> Message | None: ...

    def halt(self, tps: Collection[TopicPartition] | None) -> None: ...

    def abandon(self) -> None: ...

    def positions(self) -> dict[TopicPartition, int]: ...

    def reset(self, tps: Collection[TopicPartition]) -> None: ...

    def finish_if_held_by(self, holder: Holder) -> None: ...

    def put_back(self, holder: Holder) -> None: ...

    def wake(self) -> None: ...


class Handoff:
    def __init__(self, on_take: Callable[[int], None] | None = None) -> None:
        self.on_take = on_take
        self._cond = threading.Condition()
        self.epochs: dict[TopicPartition, int] = {}  # read without the lock by streams (atomic dict reads)
        self._next_epoch = 1
        self._start: dict[TopicPartition, int] = {}
        self._streams: list[HandoffStream] = []
        self.suspended = False
        self.closed = False
        self.gated: set[int] = set()  # epochs opened but not handed out until `before_starting_fetchers` returned
        self.failure: Exception | None = None  # the connector failed: every stream raises this

    def register(self, stream: HandoffStream) -> None:
        self._streams.append(stream)
        _watch_thread_failures(self)

    # -- the worker's side ---------------------------------------------------------------------------
    def open(self, start_offsets: Mapping[TopicPartition, int], gated: bool = False) -> int:
        """Open partitions for hand-out at a fresh epoch, each starting at its fetch offset; `gated`: fetch,
        but hand nothing out before `ungate` (Scala calls `before_starting_fetchers` before fetching)."""
        for stream in self._streams:
            stream.reset(start_offsets.keys())
        with self._cond:
            epoch = self._next_epoch
            self._next_epoch += 1
            self._start.update(start_offsets)
            for tp in start_offsets:
                self.epochs[tp] = epoch
            if gated:
                self.gated.add(epoch)
            return epoch

    def ungate(self) -> None:
        """Hand out what was opened gated (the listener returned, or the attempt ended without calling it)."""
        if self.gated:
            with self._cond:
                self.gated.clear()
                self._cond.notify_all()

    def fail(self, failure: Exception) -> None:
        """The connector failed: streams raise `failure` from now on (woken if they wait for records)."""
        with self._cond:
            self.failure = failure
            self._cond.notify_all()
        self._halt_all()
        for stream in self._streams:
            stream.wake()

    def revoke(self, tps: Collection[TopicPartition], wait_s: float) -> None:
        """Stop handing out `tps`; wait (up to `wait_s`) until no stream holds one of their records.

        Only records of `tps` are waited for: a slow record of a partition that stays never delays this.
        A record is held only while its thread is processing it: not once the thread asked for the next one,
        committed, shut down, called `done()` or ended (checked every `RECHECK_S`: an ending thread notifies
        nobody). A wait longer than `TELL_AFTER_S` is logged at WARNING; a record still held after `wait_s` is
        abandoned: not counted processed, so the next owner gets it again. That bounds a release when an
        application thread is slow or stuck.
        """
        revoked = set(tps)
        with self._cond:
            for tp in revoked:
                self.epochs.pop(tp, None)
        started = time.monotonic()
        for stream in self._streams:
            with stream.lock:
                stream.halt(revoked)
                stream.waited_on = True
                try:
                    _wait_for_release(stream, revoked, started, wait_s)
                finally:
                    stream.waited_on = False

    def in_hand(self, tps: Collection[TopicPartition]) -> set[TopicPartition]:
        """Those of `tps` whose record a thread is processing now (a release of them would wait)."""
        busy = set()
        for stream in self._streams:
            with stream.lock:
                held = stream.held()
            if held is not None and held.topic_partition in tps:
                busy.add(held.topic_partition)
        return busy

    def forget(self, tps: Iterable[TopicPartition]) -> None:
        """Drop the positions of partitions no longer owned (after their final commit)."""
        gone = [tp for tp in tps if tp not in self.epochs]
        for stream in self._streams:
            stream.reset(gone)
        with self._cond:
            for tp in gone:
                self._start.pop(tp, None)

    def processed(self) -> dict[TopicPartition, int]:
        """Next offset after the last processed record, per partition opened here."""
        with self._cond:
            out = dict(self._start)
        for stream in self._streams:
            with stream.lock:
                positions = stream.positions()
            for tp, offset in positions.items():
                if tp in out and offset > out[tp]:
                    out[tp] = offset
        return out

    def suspend(self) -> None:
        """ZooKeeper connection suspended: owner nodes may be expiring, so hand nothing out."""
        with self._cond:
            self.suspended = True
        self._halt_all()

    def resume(self) -> None:
        with self._cond:
            self.suspended = False
            self._cond.notify_all()

    def wait_resumed(self, timeout_s: float | None, epoch: int) -> bool:
        """Wait until records of `epoch` may be handed out (not suspended, not gated), or closed, or failed."""
        with self._cond:
            return self._cond.wait_for(
                lambda: (not self.suspended and epoch not in self.gated) or self.closed or self.failure is not None,
                timeout=timeout_s,
            )

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self.epochs.clear()
            self._cond.notify_all()
        self._halt_all()

    def _halt_all(self) -> None:
        """Streams hand out nothing more before their next check (of the epoch and of `suspended`)."""
        for stream in self._streams:
            with stream.lock:
                stream.halt(None)

    # -- the application's side ----------------------------------------------------------------------
    def done_for_current_thread(self) -> None:
        """`commit_offsets()` and `shutdown()` mark the calling thread's (and asyncio task's) held records
        processed."""
        for holder in current_holders():
            for stream in self._streams:
                stream.finish_if_held_by(holder)

    def failed(self, thread: threading.Thread) -> None:
        """`thread` raised while processing (on the calling thread: so did its running asyncio task): its
        records in hand are not processed (at least once: they are handed out again, here or by the
        partition's next owner)."""
        holders = current_holders() if thread is threading.current_thread() else [thread]
        for holder in holders:
            for stream in self._streams:
                with stream.lock:
                    stream.put_back(holder)


def _wait_for_release(stream: HandoffStream, revoked: set[TopicPartition], started: float, wait_s: float) -> None:
    """Wait (under `stream.lock`) until `stream` holds no record of `revoked`; abandon it after `wait_s`."""
    told = False
    while (held := stream.held()) is not None and held.topic_partition in revoked:
        waited = time.monotonic() - started
        if waited >= wait_s:
            log.warning(
                "abandoning in-flight record %s@%d of %s after %.0fs; its next owner gets it again",
                held.topic_partition,
                held.offset,
                held.thread_id,
                waited,
            )
            stream.abandon()
            return
        if waited >= TELL_AFTER_S and not told:
            told = True
            log.warning(
                "release of %s waits for %s to finish record %s@%d (at most %.0fs; then it is abandoned)",
                held.topic_partition,
                held.thread_id,
                held.topic_partition,
                held.offset,
                wait_s,
            )
        stream.lock.wait(timeout=min(RECHECK_S, wait_s - waited))


_handoffs: weakref.WeakSet[Handoff] = weakref.WeakSet()
_previous_excepthook: Callable[[threading.ExceptHookArgs], object] | None = None


def _watch_thread_failures(handoff: Handoff) -> None:
    """Chain `threading.excepthook` (again if the application replaced it since) so that a stream thread
    ended by an exception does not count its record in hand as processed. Python calls the hook on the dying
    thread, before it counts as ended, and the record stays in hand while the exception unwinds, so no
    release can take it for processed in between."""
    global _previous_excepthook
    _handoffs.add(handoff)
    if threading.excepthook is not _on_thread_exception:  # first connector, or the application set its own
        _previous_excepthook = threading.excepthook
        threading.excepthook = _on_thread_exception


def _on_thread_exception(args: threading.ExceptHookArgs) -> None:
    if args.thread is not None:
        for handoff in list(_handoffs):
            handoff.failed(args.thread)
    assert _previous_excepthook is not None
    _previous_excepthook(args)
