"""Use of a connector after `os.fork()`: raise at once, in the child, with what to do instead.

A forked child inherits the connector's objects but none of its threads: no ZooKeeper session thread, no
rebalance worker, no librdkafka threads, and locks possibly held by threads that do not exist there. Every
call would hang or act on connections that belong to the parent, so each public entry point checks the
process id it was created in (`ForkGuard.check`), and a fork hook drains the streams' chunks so a loop the
child continues reaches that check at its next record.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Protocol

from migrator.errors import MigratorError


class UsedAfterFork(MigratorError):
    """A connector or stream was used in a process forked from the one that created it."""


class ForkGuard:
    """Remembers the creating process; `check` raises `UsedAfterFork` in any other."""

    def __init__(self, what: str) -> None:
        self._pid = os.getpid()
        self._what = what

    def check(self) -> None:
        pid = os.getpid()
        if pid != self._pid:
            raise UsedAfterFork(
                f"this {self._what} was created in process {self._pid}, and process {pid} is a fork of it: its "
                "ZooKeeper session, Kafka clients and threads stay with the parent. Create a ConsumerConnector "
                "in the child (or start processes with multiprocessing's 'spawn' or 'forkserver' method)"
            )

    @property
    def forked(self) -> bool:
        return os.getpid() != self._pid


class ForkAware(Protocol):
    def after_fork_in_child(self) -> None: ...


_live: weakref.WeakSet[ForkAware] = weakref.WeakSet()
_hook_lock = threading.Lock()
_hooked = False


def watch_fork(obj: ForkAware) -> None:
    """Call `obj.after_fork_in_child()` in every child forked while `obj` lives."""
    global _hooked
    with _hook_lock:
        _live.add(obj)
        if not _hooked:
            os.register_at_fork(after_in_child=_after_fork_in_child)
            _hooked = True


def _after_fork_in_child() -> None:
    for obj in list(_live):
        obj.after_fork_in_child()
