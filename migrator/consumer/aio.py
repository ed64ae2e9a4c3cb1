"""`async for m in stream.aiter()`: a `KafkaStream` consumed by an asyncio task.

Waiting for records blocks, so each async iterator takes records from the stream on a thread of its own
(one per iterator, started on first use) while the event loop runs. A record it hands out is in the hands
of the *task* that asked for it, not of that thread: the task processes it, so asking for the next one,
`stream.done()`, or `commit_offsets()`/`shutdown()` called from that task mark it processed, and a task
that raises or is cancelled with it in hand puts it back (it is handed out again). A wait for the next
record that is cancelled is kept, so no record is taken and then dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from migrator.protocol.message import Message


class TaskStream(Protocol):
    """What an async iterator needs of its stream (`KafkaStream`)."""

    thread_id: str

    def __iter__(self) -> Iterator[Message]: ...

    def hand_to(self, task: asyncio.Future[Any]) -> None: ...


_END = object()  # the stream ended (StopIteration cannot travel through a future)


class AsyncRecords:
    """The async iterator `KafkaStream.aiter()` returns; iterate it again after an exception (such as
    `ConsumerTimeout`) to continue where it was, as with the stream's own iterator."""

    def __init__(self, stream: TaskStream) -> None:
        self._stream = stream
        self._chain: Iterator[Message] | None = None
        self._taking: asyncio.Future[object] | None = None
        self._taker = ThreadPoolExecutor(1, thread_name_prefix=f"{stream.thread_id}-aiter")
        self._ended = False

    def __aiter__(self) -> AsyncRecords:
        return self

    async def __anext__(self) -> Message:
        if self._ended:
            raise StopAsyncIteration
        if self._taking is None:
            if self._chain is None:
                self._chain = iter(self._stream)
            self._taking = asyncio.get_running_loop().run_in_executor(self._taker, self._take, self._chain)
        taking = self._taking
        try:
            item = await asyncio.shield(taking)
        except asyncio.CancelledError:
            raise  # the take goes on: the next call awaits it, so its record is not lost
        except BaseException:
            self._taking = None  # ConsumerTimeout, a failed connector: the next call takes again
            raise
        self._taking = None
        if item is _END:
            self._end()
            raise StopAsyncIteration
        assert isinstance(item, Message)
        task = asyncio.current_task()
        if task is not None:
            self._stream.hand_to(task)
        return item

    async def aclose(self) -> None:
        """Stop using the stream here: the record in hand stays in hand (see `KafkaStream.__iter__`)."""
        self._end()

    @staticmethod
    def _take(chain: Iterator[Message]) -> object:
        return next(chain, _END)

    def _end(self) -> None:
        self._ended = True
        self._taker.shutdown(wait=False)  # its thread ends once the stream's iteration does
