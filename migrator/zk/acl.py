"""ZooKeeper ACLs of a group's nodes: reading them, and setting them parents first.

`ACL`, `Id` and `Permissions` are kazoo's types under the adapter's names: what a caller builds is what
ZooKeeper receives."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.security import ACL, Id, Permissions

from migrator.errors import NotAuthorised
from migrator.zk.client import identity_of
from migrator.zk.session import ZkSession

__all__ = ["ACL", "Id", "NodeAcl", "Permissions", "existing", "read_acls", "set_acls"]


@dataclass(frozen=True, slots=True)
class NodeAcl:
    """The ACL one node should have."""

    path: str
    acl: list[ACL]
    create: bool = True
    """Create the node (empty) when absent; False: set its ACL only when it exists."""


def existing(zk: ZkSession, paths: Sequence[str]) -> set[str]:
    """Which of `paths` exist."""
    return {path for path in paths if zk.exists(path) is not None}


def read_acls(zk: ZkSession, paths: Sequence[str]) -> list[tuple[str, list[ACL] | None]]:
    """Each node's ACLs in the order given (None: the node does not exist)."""
    out: list[tuple[str, list[ACL] | None]] = []
    for path in paths:
        try:
            acls, _ = zk.get_acls(path)
        except NoNodeError:
            out.append((path, None))
            continue
        out.append((path, list(acls)))
    return out


def _set_one(zk: ZkSession, node: NodeAcl) -> bool:
    """Whether the node's ACL was set (False: absent and not to be created)."""
    if zk.exists(node.path) is None:
        if not node.create:
            return False
        zk.create(node.path, b"", acl=node.acl)
    zk.set_acls(node.path, node.acl)
    return True


def set_acls(
    zk: ZkSession, root: str, nodes: Sequence[NodeAcl], *, children_of: str, children_acl: list[ACL]
) -> list[NodeAcl]:
    """Create `root`'s path if needed, then give each of `nodes` (parents first) its ACL, and every child of
    `children_of` `children_acl`; returns the nodes set. Raises `NotAuthorised` naming `root` when the
    session may not."""
    done: list[NodeAcl] = []
    try:
        zk.ensure_path(root)
        done = [node for node in nodes if _set_one(zk, node)]
        for name in zk.get_children(children_of):
            zk.set_acls(f"{children_of}/{name}", children_acl)
    except NoAuthError as exc:
        raise NotAuthorised(root, identity_of(zk)) from exc
    return done
