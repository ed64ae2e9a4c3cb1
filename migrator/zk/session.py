"""The handle of a ZooKeeper session as the rest of migrator holds it, and the few session-wide operations
that are not about one group (a node's existence, listing a node's children, closing).

`ZkSession` is the started client `migrator.zk.client.connect` returns; callers pass it to the typed
functions of `migrator.zk`; outside `migrator.zk` nothing should call its methods."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat

ZkSession: TypeAlias = KazooClient
NodeStat: TypeAlias = ZnodeStat
"""A node's stat (`version`, `mzxid`, `ctime`, ...)."""
SessionState: TypeAlias = KazooState
"""What a session listener is told: `CONNECTED`, `SUSPENDED` (the connection is lost, the session may live) or
`LOST` (the session expired)."""

__all__ = [
    "NodeStat",
    "SessionState",
    "ZkSession",
    "children",
    "chroot",
    "close",
    "delete_tree",
    "ensure_path",
    "exists",
    "listen",
    "stat_of",
    "unlisten",
]


def chroot(zk: ZkSession) -> str:
    """The chroot the session's paths are under ("" for none)."""
    return str(zk.chroot or "")


def exists(zk: ZkSession, path: str) -> bool:
    return zk.exists(path) is not None


def stat_of(zk: ZkSession, path: str) -> NodeStat | None:
    """The node's stat, None when it does not exist."""
    stat: NodeStat | None = zk.exists(path)
    return stat


def children(zk: ZkSession, path: str) -> list[str] | None:
    """The node's children (unsorted), None when it does not exist."""
    try:
        names: list[str] = zk.get_children(path)
    except NoNodeError:
        return None
    return names


def delete_tree(zk: ZkSession, path: str) -> bool:
    """Delete a node and everything under it; False when it did not exist."""
    try:
        zk.delete(path, recursive=True)
    except NoNodeError:
        return False
    return True


def ensure_path(zk: ZkSession, path: str) -> None:
    """Create the node and its missing parents (empty, open ACL); nothing when it exists."""
    zk.ensure_path(path)


def listen(zk: ZkSession, on_state: Callable[[SessionState], None]) -> None:
    """Call `on_state` on kazoo's thread at every change of the session's state."""
    zk.add_listener(on_state)


def unlisten(zk: ZkSession, on_state: Callable[[SessionState], None]) -> None:
    zk.remove_listener(on_state)


def close(zk: ZkSession) -> None:
    """End the session (its ephemeral nodes go with it) and free the client."""
    zk.stop()
    zk.close()
