"""An exclusive lock in ZooKeeper (kazoo's Lock recipe) taken without waiting, whose holder learns when its
session is interrupted: from then on another process may hold it."""

from __future__ import annotations

import threading

from kazoo.client import KazooState
from kazoo.recipe.lock import Lock

from migrator.zk.errors import NoNodeError
from migrator.zk.session import ZkSession


def holders(zk: ZkSession, path: str) -> list[str]:
    """The identities of the lock's contenders at `path`, the holder first, read without writing anything
    (kazoo's `Lock.contenders` creates the lock's path first)."""
    try:
        names = zk.get_children(path)
    except NoNodeError:
        return []
    found = []
    for name in sorted(names, key=lambda n: n.rsplit("__", 1)[-1]):
        try:
            found.append(zk.get(f"{path}/{name}")[0].decode("utf-8", "replace"))
        except NoNodeError:
            continue
    return found


class ExclusiveLock:
    def __init__(self, zk: ZkSession, path: str, identity: str) -> None:
        """`identity`: what other contenders see of the holder."""
        self.identity = identity
        self._zk = zk
        self._lock = Lock(zk, path, identifier=identity)
        self._interrupted = threading.Event()

    def try_acquire(self) -> bool:
        """Take the lock now or not at all; once taken, watch the session."""
        if not self._lock.acquire(blocking=False):
            return False
        self._zk.add_listener(self._on_state)
        return True

    def others(self) -> list[str]:
        """The identities of the other contenders, the holder first."""
        return [h for h in self._lock.contenders() if h != self.identity]

    def held(self) -> bool:
        """False once the session was interrupted after the lock was taken."""
        return not self._interrupted.is_set()

    def release(self) -> None:
        """Stop watching the session and give the lock back (when the session can still say so)."""
        self._zk.remove_listener(self._on_state)
        if self._zk.connected:
            self._lock.release()

    def _on_state(self, state: KazooState) -> None:
        # Suspended may become Lost (the lock node expires) without us hearing of it in time: stop either way.
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            self._interrupted.set()
