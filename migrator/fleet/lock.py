"""One applying scanner at a time, enforced by ZooKeeper (kazoo's Lock recipe at `FLEET_LOCK`).

Two scanners switching the same fleet would each take the other's switches for trouble and roll back
each other's waves. The lock lives in the first ensemble given; every scanner of one fleet must name the
same first ensemble (docs/fleet.md). A second scanner refuses at once with the holder's identity.
"""

from __future__ import annotations

import getpass
import os
import socket
import time
from types import TracebackType

from migrator.errors import RefusedError
from migrator.zk.lock import ExclusiveLock, holders
from migrator.zk.paths import FLEET_LOCK
from migrator.zk.session import ZkSession


def identity(run_id: str) -> str:
    """Who holds the lock, as a second scanner will print it."""
    try:
        user = getpass.getuser()
    except Exception:  # no passwd entry in some containers
        user = str(os.getuid())
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return f"{user}@{socket.gethostname()} pid {os.getpid()} run {run_id} since {started}"


class FleetLock:
    """Context manager: acquire without waiting, or raise `RefusedError` naming the holder (exit 2)."""

    def __init__(self, zk: ZkSession, run_id: str, path: str = FLEET_LOCK) -> None:
        self.identity = identity(run_id)
        self._lock = ExclusiveLock(zk, path, self.identity)

    def held(self) -> bool:
        """False once the ZooKeeper connection was interrupted: another scanner may hold the lock now."""
        return self._lock.held()

    def __enter__(self) -> FleetLock:
        if not self._lock.try_acquire():
            holders = self._lock.others()
            holder = holders[0] if holders else "unknown (a holder left no identity)"
            raise _held_by(holder)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._lock.release()


def refuse_if_held(zk: ZkSession, path: str = FLEET_LOCK) -> None:
    """Raise `RefusedError` naming the holder if anyone holds the lock; reads only, so a dry run can check it."""
    found = holders(zk, path)
    if found:
        raise _held_by(found[0])


def _held_by(holder: str) -> RefusedError:
    return RefusedError(f"another fleet-scan --apply/--rollback/--cleanup or cleanup holds {FLEET_LOCK}: {holder}")
