"""Ctrl-C in the operator commands: raised as KeyboardInterrupt where it cannot be lost, held off across a write.

`migrator.cli.main` installs `on_interrupt` for every command; `interrupts_deferred` wraps a write.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import CodeType, FrameType

from kazoo.client import KazooClient

_KAZOO_CALL = KazooClient._call.__code__
"""kazoo queues a request and wakes its connection thread inside a bare `except:`: a KeyboardInterrupt
raised there is swallowed, the request is failed with ConnectionClosedError although it was sent, and the
client can be left waiting 30 s for replies that no longer reach anyone."""
RETRY_S = 0.01


def on_interrupt(signum: int, frame: FrameType | None) -> None:
    """The commands' SIGINT handler: KeyboardInterrupt, once out of kazoo's request path."""
    if not resent_outside_kazoo(signum, frame):
        raise KeyboardInterrupt


def resent_outside_kazoo(signum: int, frame: FrameType | None) -> bool:
    """True when the signal landed inside kazoo's `_call` and is sent again in `RETRY_S` (the call only queues
    a request and never blocks): a handler that would raise must then return, so that the signal is never
    lost nor turned into a ZooKeeper error."""
    if not _inside(frame, _KAZOO_CALL):
        return False
    threading.Timer(RETRY_S, os.kill, (os.getpid(), signum)).start()
    return True


def _inside(frame: FrameType | None, code: CodeType) -> bool:
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Ctrl-C (SIGINT) during the block raises KeyboardInterrupt only when the block ends, so that a write
    is never cut between its request and its reply: the command can then say whether it happened."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread; elsewhere Ctrl-C never arrives as an exception
        return
    pending: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: pending.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pending:
        raise KeyboardInterrupt
