"""Ctrl-C in the operator commands: raised as KeyboardInterrupt where it cannot be lost, held off across a write.

`migrator.cli.main` calls `install_interrupt_handler` for every command; `interrupts_deferred` wraps a write.

kazoo's `KazooClient._call` queues a request and wakes its connection thread inside a bare `except:`: a
KeyboardInterrupt raised there is swallowed, the request is failed with ConnectionClosedError although it was
sent, and the client can be left waiting 30 s for replies that no longer reach anyone. This module is the one
place that knows it: `_call` is wrapped once (`_guard_kazoo_requests`) so that a SIGINT arriving while the
main thread is inside it is recorded and delivered again the moment the call returns. The wrapper only
counts and re-delivers, so kazoo's behaviour is unchanged; `tests/unit/test_sigint_handling.py` pins that the
method exists and that a signal inside it is delivered after it.
"""

from __future__ import annotations

import atexit
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from kazoo.client import KazooClient

from migrator.errors import EXIT_INTERRUPTED


class _State:
    """Main-thread only: how deep it is inside kazoo's request path, the signals held there, and whether a
    KeyboardInterrupt is already unwinding the command."""

    kazoo_depth = 0
    held: list[int] = []
    raised = 0


def _guard_kazoo_requests() -> None:
    original: Callable[..., Any] = KazooClient._call
    if getattr(original, "_migrator_guarded", False):
        return

    @functools.wraps(original)
    def guarded(self: KazooClient, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is not threading.main_thread():
            return original(self, *args, **kwargs)
        _State.kazoo_depth += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            _State.kazoo_depth -= 1
            if _State.kazoo_depth == 0 and _State.held:
                held = _State.held[-1]
                _State.held.clear()
                signal.raise_signal(held)  # the handler runs now, outside kazoo

    guarded._migrator_guarded = True  # type: ignore[attr-defined]
    KazooClient._call = guarded


_guard_kazoo_requests()


def install_interrupt_handler() -> None:
    """Make `on_interrupt` the SIGINT handler of this command run (main thread only)."""
    if threading.current_thread() is threading.main_thread():
        _State.raised = 0
        _State.held.clear()
        signal.signal(signal.SIGINT, on_interrupt)


def on_interrupt(signum: int, frame: FrameType | None) -> None:
    """The commands' SIGINT handler: KeyboardInterrupt once, out of kazoo's request path.

    While that first interrupt unwinds the command (closing its ZooKeeper session, printing what is in
    place) and while the interpreter exits, a second SIGINT is ignored, so that `timeout -s INT` (which
    signals the child, then its process group) never replaces the first's message or exit code. A third one
    during the unwinding exits at once, without clean-up."""
    if resent_outside_kazoo(signum, frame):
        return
    _State.raised += 1
    if _State.raised == 1:
        atexit.register(_ignore_interrupts_while_exiting)
        raise KeyboardInterrupt
    if _State.raised >= 3:
        sys.stderr.write("error: interrupted three times; exiting without clean-up\n")
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)


def _ignore_interrupts_while_exiting() -> None:
    """The interpreter puts SIGINT back to its default (death by signal) as it finalises: a second Ctrl-C
    arriving then would turn the documented exit code 130 into a kill. Once interrupted, exiting ignores it."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def resent_outside_kazoo(signum: int, _frame: FrameType | None = None) -> bool:
    """True when the signal arrived while the main thread is inside kazoo's request path: it is held and
    delivered again as soon as that call returns, so a handler that would raise must return instead."""
    if _State.kazoo_depth == 0 or threading.current_thread() is not threading.main_thread():
        return False
    _State.held.append(signum)
    return True


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
        signal.raise_signal(signal.SIGINT)  # to the handler in force again (KeyboardInterrupt, counted once)
