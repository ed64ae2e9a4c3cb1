"""Ctrl-C in the operator commands: raised as KeyboardInterrupt where it cannot be lost, held off across a write.

`migrator.cli.main` calls `install_interrupt_handler` for every command; `interrupts_deferred` wraps a write.

A SIGINT that lands while the main thread is queueing a ZooKeeper request would be swallowed there
(`migrator.zk.interrupts` flags that span on the clients the commands open). Such a signal is held: it is sent
again a moment later (`REDELIVER_S`), by which time the request is queued and the handler raises. A signal
that lands while a call waits for a reply raises at once, so Ctrl-C still stops a call blocked on an
unreachable server.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from migrator.errors import EXIT_INTERRUPTED
from migrator.zk.interrupts import in_request_queueing

REDELIVER_S = 0.005
"""How long a held signal waits before it is sent again: queueing a request takes microseconds."""


class _State:
    """Main-thread only: whether a KeyboardInterrupt is already unwinding the command."""

    raised = 0


def install_interrupt_handler() -> None:
    """Make `on_interrupt` the SIGINT handler of this command run (main thread only)."""
    if threading.current_thread() is threading.main_thread():
        _State.raised = 0
        signal.signal(signal.SIGINT, on_interrupt)


def on_interrupt(signum: int, frame: FrameType | None) -> None:
    """The commands' SIGINT handler: KeyboardInterrupt once, out of kazoo's request path.

    While that first interrupt unwinds the command (closing its ZooKeeper session, printing what is in
    place) and while the interpreter exits, a second SIGINT is ignored, so that `timeout -s INT` (which
    signals the child, then its process group) never replaces the first's message or exit code. A third one
    during the unwinding exits at once, without clean-up."""
    if resent_outside_kazoo(signum):
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


def resent_outside_kazoo(signum: int) -> bool:
    """True when the signal landed while the main thread was queueing a ZooKeeper request: it is sent again
    in a moment (when the request is queued), so a handler that would raise must return instead."""
    if threading.current_thread() is not threading.main_thread() or not in_request_queueing():
        return False
    timer = threading.Timer(REDELIVER_S, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()
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
