"""An immutable picture of one consumer group as ZooKeeper holds it.

Readers (status, set-mode preflight, the fleet scan) build a `GroupView`; decisions over it are pure.
A node that does not decode is kept as a `CorruptMember` rather than dropped, so that the decision can
say why it refuses.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from types import MappingProxyType

from migrator.protocol.codecs import ModeNode, PublishedAuthority, Registration
from migrator.protocol.dialect import Dialect
from migrator.protocol.partition import TopicPartition


def bridge_ids(member_ids: Set[str], migration_ids: Set[str]) -> frozenset[str]:
    """Who ZooKeeper says is a bridge: a consumer registered under both `ids` and `migration/ids`. A
    `migration/ids` node alone is a bridge on its way in or out, which no assignment counts."""
    return frozenset(member_ids) & frozenset(migration_ids)


@dataclass(frozen=True, slots=True)
class Member:
    consumer_id: str
    registration: Registration
    ctime_ms: int
    is_bridge: bool  # in `bridge_ids`
    dialect: Dialect = Dialect.SCALA
    """The legacy layout this member's nodes are written in (a bridge always speaks SCALA)."""


@dataclass(frozen=True, slots=True)
class Fence:
    """What the `ids` folder's ACL lets a member do: `members_can_create` False (only identities that may
    also change the ACL can create) means fenced (`migrator cutover`). An absent `ids` folder is not fenced (a
    member creates it with an open ACL)."""

    ids_exists: bool
    members_can_create: bool

    @property
    def fenced(self) -> bool:
        return self.ids_exists and not self.members_can_create


@dataclass(frozen=True, slots=True)
class CorruptMember:
    consumer_id: str
    problem: str


def _frozen(mapping: Mapping | None) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True, slots=True)
class GroupView:
    """Everything under `/consumers/<group>` that matters to migration, read at about one instant."""

    group: str
    members: tuple[Member, ...] = ()
    corrupt_members: tuple[CorruptMember, ...] = ()
    migration_ids: frozenset[str] = frozenset()
    mode: ModeNode = field(default_factory=ModeNode.absent)
    mode_mtime_ms: int | None = None
    mode_version: int | None = None
    """The mode node's version as read (None: absent): a mode write is conditional on it."""
    authorities: Mapping[str, PublishedAuthority] = field(default_factory=dict)
    authority_mzxids: Mapping[str, int] = field(default_factory=dict)
    """consumerId -> the mzxid of its authority node's last write (ZooKeeper's own order of writes, which
    `set-mode --wait` compares with the mode write's)."""
    owners: Mapping[TopicPartition, str] = field(default_factory=dict)
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    exists: bool = True
    fence: Fence | None = None
    """The `ids` folder's fence, when the reader was asked for it (None: not read)."""
    ids_cversion: int | None = field(default=None, compare=False)
    """The `ids` folder's child version as listed (None: not read so): a later listing compares it to know
    whether it saw every change of membership since (`protocol.membership_delta`)."""

    def __post_init__(self) -> None:
        for name in ("authorities", "authority_mzxids", "owners", "offsets"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))

    @property
    def legacy(self) -> tuple[Member, ...]:
        return tuple(m for m in self.members if not m.is_bridge)

    @property
    def bridges(self) -> tuple[Member, ...]:
        return tuple(m for m in self.members if m.is_bridge)

    @property
    def member_ids(self) -> frozenset[str]:
        return frozenset(m.consumer_id for m in self.members) | {c.consumer_id for c in self.corrupt_members}

    def owners_of(self, topic: str) -> dict[TopicPartition, str]:
        """The owner thread of each owned partition of `topic`."""
        return {tp: thread for tp, thread in self.owners.items() if tp.topic == topic}

    @property
    def topics(self) -> frozenset[str]:
        """Static topics of every member's subscription (wildcard members contribute nothing here)."""
        return frozenset(
            topic for m in self.members if not m.registration.is_wildcard for topic in m.registration.subscription
        )
