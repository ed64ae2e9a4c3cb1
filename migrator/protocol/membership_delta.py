"""Which members' `ids` nodes a rebalance must read again, from two listings of the `ids` folder. Pure.

Every bridge re-reading every member's registration on each join or leave costs the group M² reads. The `ids`
folder's child version (`cversion`) counts every create and delete of a child, so two listings tell whether
the children that differ between them are all that changed: then only the added children need reading, and the
others keep the registrations read before. Otherwise (a member deleted and registered again between the
listings, perhaps with another subscription; a child added and removed again; the folder recreated) nothing
read before can be trusted and everything is read, as the Scala connector always does. A registration node is
written once: members register by creating it, and re-register by deleting and creating it (never by writing
it), so a kept child's data is the data read before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Listing:
    """The children of the `ids` folder and its child version, as one read returned them."""

    children: frozenset[str]
    cversion: int


def to_read(last: Listing, now: Listing) -> frozenset[str] | None:
    """The children whose registration must be read to bring a snapshot of `last` up to `now`; None when the
    listings do not account for every change between them (read everything)."""
    added = now.children - last.children
    removed = last.children - now.children
    if now.cversion - last.cversion != len(added) + len(removed):
        return None
    return frozenset(added)


def merged(last: Mapping[str, R], now: Listing, read: Mapping[str, R]) -> dict[str, R]:
    """The registrations of `now`'s children: the ones just `read`, the others as `last` had them. A child
    neither read nor known (it left between the listing and the read) is left out, as a full read leaves it."""
    return {cid: read[cid] if cid in read else last[cid] for cid in sorted(now.children) if cid in read or cid in last}


def only_arrived(before: frozenset[str], now: frozenset[str], member: str) -> bool:
    """Whether the one change from `before` to `now` is `member` appearing."""
    return now - before == {member} and before <= now
