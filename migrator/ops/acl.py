"""`acl protect|show`: only an admin identity may switch a group, everyone may still consume.

Consumers (legacy and bridge) authenticate as nobody, so "world" must keep what they do: register
ephemeral nodes under `ids` and `migration/ids`, claim `owners/<topic>/<partition>`, write offsets, publish
under `migration/authority`, and read everything. The mode and its audit trail are different: world gets
READ on them and on `migration` itself (no CREATE/DELETE there, so nobody can delete the mode node and
create a new one with open ACLs), and the admin identity gets ALL. Nobody but the admin gets ADMIN on a
protected node, so the ACLs cannot be changed back by a consumer.
"""

from __future__ import annotations

from dataclasses import dataclass

from migrator.zk import acl as zk_acl
from migrator.zk.acl import ACL, Id, NodeAcl, Permissions
from migrator.zk.client import digest_acl_id
from migrator.zk.paths import GroupPaths
from migrator.zk.session import ZkSession

WORLD = Id("world", "anyone")
CONSUMER_PERMS = Permissions.READ | Permissions.CREATE | Permissions.DELETE | Permissions.WRITE


@dataclass(frozen=True, slots=True)
class NodePolicy:
    path: str
    world_perms: int
    create: bool = True
    """False for the mode node: protect secures it when present but never creates it (absent has a meaning)."""


def policy(group: str) -> list[NodePolicy]:
    """Parents first, so each node is created under a parent that already has its ACL."""
    p = GroupPaths(group)
    return [
        NodePolicy(p.root, Permissions.READ),
        NodePolicy(p.ids, CONSUMER_PERMS),
        NodePolicy(p.owners, CONSUMER_PERMS),
        NodePolicy(p.offsets, CONSUMER_PERMS),
        NodePolicy(p.migration, Permissions.READ),
        NodePolicy(p.migration_ids, CONSUMER_PERMS),
        NodePolicy(p.authority, CONSUMER_PERMS),
        NodePolicy(p.audit, Permissions.READ),
        NodePolicy(p.mode, Permissions.READ, create=False),
    ]


def acls_for(world_perms: int, admin_acl_id: str) -> list[ACL]:
    return [ACL(world_perms, WORLD), ACL(Permissions.ALL, Id("digest", admin_acl_id))]


def planned(zk: ZkSession, group: str, admin: str) -> list[tuple[str, list[ACL]]]:
    """What `protect` would set (read-only): every node of the policy, the mode node only when it exists."""
    admin_id = digest_acl_id(admin)
    nodes = policy(group)
    present = zk_acl.existing(zk, [node.path for node in nodes if not node.create])
    return [(node.path, acls_for(node.world_perms, admin_id)) for node in nodes if node.create or node.path in present]


def protect(zk: ZkSession, group: str, admin: str) -> list[tuple[str, list[ACL]]]:
    """Create the group's parents if needed and set the policy's ACLs; returns what was set.

    The connection must be authenticated as `admin` (or have ADMIN rights on the nodes already).
    """
    admin_id = digest_acl_id(admin)
    p = GroupPaths(group)
    wanted = [NodeAcl(node.path, acls_for(node.world_perms, admin_id), node.create) for node in policy(group)]
    done = zk_acl.set_acls(zk, p.root, wanted, children_of=p.audit, children_acl=acls_for(Permissions.READ, admin_id))
    return [(node.path, node.acl) for node in done]


def show(zk: ZkSession, group: str) -> list[tuple[str, list[ACL] | None]]:
    """ACLs of every node of the group layout (None: the node does not exist)."""
    return zk_acl.read_acls(zk, [node.path for node in policy(group)])
