"""One applying scanner at a time, enforced by ZooKeeper (kazoo's Lock recipe at `FLEET_LOCK`).

Two scanners switching the same fleet would each take the other's switches for trouble and roll back
each other's waves. The lock lives in the first ensemble given; every scanner of one fleet must name the
same first ensemble (docs/fleet.md). A second scanner refuses at once with the holder's identity.
"""

from __future__ import annotations

import getpass
import os
import socket
import threading
import time
from types import TracebackType

from kazoo.client import KazooClient, KazooState
from kazoo.recipe.lock import Lock

from migrator.errors import RefusedError
from migrator.zk.paths import FLEET_LOCK


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

    def __init__(self, zk: KazooClient, run_id: str, path: str = FLEET_LOCK) -> None:
        self.identity = identity(run_id)
        self._zk = zk
        self._lock = Lock(zk, path, identifier=self.identity)
        self._lost = threading.Event()

    def _on_state(self, state: KazooState) -> None:
        # Suspended may become Lost (the lock node expires) without us hearing of it in time: stop either way.
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            self._lost.set()

    def held(self) -> bool:
        """False once the ZooKeeper connection was interrupted: another scanner may hold the lock now."""
        return not self._lost.is_set()

    def __enter__(self) -> FleetLock:
        if not self._lock.acquire(blocking=False):
            holders = [h for h in self._lock.contenders() if h != self.identity]
            holder = holders[0] if holders else "unknown (a holder left no identity)"
            raise RefusedError(f"another fleet-scan --apply/--rollback holds {FLEET_LOCK}: {holder}")
        self._zk.add_listener(self._on_state)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._zk.remove_listener(self._on_state)
        if self._zk.connected:
            self._lock.release()
