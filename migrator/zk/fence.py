"""The cutover fence: an ACL on a group's `ids` folder that stops any member from registering again.

Members authenticate as nobody ("world"). Fenced, world keeps READ (members list each other) and DELETE (a
running member deregisters when it leaves, and the server removes an expired session's node), but loses
CREATE: a member that starts, or whose session expired, cannot register. The admin identity gets ALL, so
only it can lift the fence. Lifted, world gets back what members use (create, delete, read, write), and the
admin identity keeps ALL (the `ids` ACL `acl protect` sets).

The writes live here; the fence is read with the rest of the group, in the group reader's one pass
(`migrator.zk.group_reader`, which judges the ACL with `members_can_create`).
"""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NodeExistsError, NoNodeError
from kazoo.security import ACL, Id, Permissions

from migrator.errors import NotAuthorised
from migrator.protocol import acl as acl_rules
from migrator.zk.client import digest_acl_id, identity_of
from migrator.zk.paths import GroupPaths

WORLD = Id("world", "anyone")
FENCED_WORLD_PERMS = Permissions.READ | Permissions.DELETE
LIFTED_WORLD_PERMS = Permissions.READ | Permissions.CREATE | Permissions.DELETE | Permissions.WRITE


def ids_acl(world_perms: int, admin: str) -> list[ACL]:
    """World with `world_perms`, the admin identity (`digest:user:password`) with ALL."""
    return [ACL(world_perms, WORLD), ACL(Permissions.ALL, Id("digest", digest_acl_id(admin)))]


def members_can_create(acls: list[ACL]) -> bool:
    """`protocol.acl.members_can_create` over kazoo's ACL entries."""
    return acl_rules.members_can_create((acl.perms, acl.id.scheme, acl.id.id) for acl in acls)


def _set_ids_acl(zk: KazooClient, group: str, acl: list[ACL]) -> None:
    path = GroupPaths(group).ids
    try:
        try:
            zk.set_acls(path, acl)
        except NoNodeError:
            try:
                zk.create(path, b"", acl=acl)
            except NodeExistsError:  # a member created it meanwhile: set the ACL on that one
                zk.set_acls(path, acl)
    except NoAuthError as exc:
        raise NotAuthorised(path, identity_of(zk)) from exc


def fence(zk: KazooClient, group: str, admin: str) -> None:
    """Deny CREATE on `ids` to members (creating the folder fenced when it is absent). The connection must be
    authenticated as `admin`, or have ADMIN rights on `ids` (an unprotected group's open ACL gives them)."""
    _set_ids_acl(zk, group, ids_acl(FENCED_WORLD_PERMS, admin))


def lift(zk: KazooClient, group: str, admin: str) -> None:
    """Give members back CREATE on `ids`; the connection must be authenticated as `admin`."""
    _set_ids_acl(zk, group, ids_acl(LIFTED_WORLD_PERMS, admin))
