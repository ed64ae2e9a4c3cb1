"""ZooKeeper ACL entries as values: the permission bits, how `acl show` spells them, and who they let register."""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntFlag

WORLD = ("world", "anyone")
"""The (scheme, id) every client has, authenticated or not."""


class Perm(IntFlag):
    """ZooKeeper's permission bits (an ACL entry's `perms`)."""

    READ = 1
    WRITE = 2
    CREATE = 4
    DELETE = 8
    ADMIN = 16


_LETTERS = ((Perm.CREATE, "c"), (Perm.DELETE, "d"), (Perm.READ, "r"), (Perm.WRITE, "w"), (Perm.ADMIN, "a"))


def perms_word(perms: int) -> str:
    """`cdrwa` with a `-` for each permission not given, as `acl show` prints them."""
    return "".join(letter if perms & bit else "-" for bit, letter in _LETTERS)


def members_can_create(entries: Iterable[tuple[int, str, str]]) -> bool:
    """Whether a member may create under a node with these ACL entries ((perms, scheme, id) each): world may (an
    open ACL), or an identity without the ADMIN right (a member's own); an identity with ADMIN is an
    administrator's, so a node only administrators may create under is fenced (`migrator cutover`)."""
    return any(
        perms & Perm.CREATE and ((scheme, id_) == WORLD or not perms & Perm.ADMIN) for perms, scheme, id_ in entries
    )
