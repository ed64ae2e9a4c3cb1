"""Which legacy layout (dialect) a group is written in, as the operator commands read and name it.

Every command that reads or writes a group's legacy nodes first recognises its dialect
(`migrator.protocol.layout_dialect`): Scala's or pykafka's. A group whose nodes match neither (or both) is
refused with the node that decided it, never read with a guessed codec. A pykafka group's owner nodes
(`owners/<repr(topic bytes)>/<leader>-<partition>`, holding a consumer id) are read here into the owner
threads the rest of the read model uses (`<consumer id>-0`), with the partition leaders pykafka's
assignment order depends on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from kazoo.client import KazooClient

from migrator.errors import RefusedError
from migrator.protocol.dialect import Dialect
from migrator.protocol.group_view import GroupView
from migrator.protocol.layout_dialect import Recognition
from migrator.protocol.partition import TopicPartition
from migrator.protocol.pykafka_layout import Spelling
from migrator.zk.paths import GroupPaths
from migrator.zk.pykafka_group import partition_leaders, read_owner_nodes, recognise_group


@dataclass(frozen=True, slots=True)
class GroupLayout:
    """A group's recognised dialect and, for pykafka, the partition leaders of its topics."""

    recognition: Recognition = field(default_factory=Recognition)
    leaders: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    """topic -> partition -> leader broker id (pykafka groups only)."""

    @property
    def dialect(self) -> Dialect | None:
        return self.recognition.dialect

    @property
    def word(self) -> str | None:
        """`scala` or `pykafka` as `--json` output names it; None for an empty or unrecognised group."""
        return self.dialect.value if self.dialect is not None else None

    @property
    def spelling(self) -> Spelling:
        return self.recognition.spelling or Spelling.PYTHON3

    @property
    def unrecognised(self) -> str | None:
        """Why no dialect can be trusted (the node that decided it); None when one (or none yet) is."""
        return self.recognition.detail if self.recognition.refusal is not None else None


def read_layout(zk: KazooClient, group: str, topics: frozenset[str] = frozenset()) -> GroupLayout:
    """The group's dialect; for pykafka also the leaders of `topics` (the topics its members consume)."""
    recognition = recognise_group(zk, GroupPaths(group))
    if recognition.dialect is not Dialect.PYKAFKA:
        return GroupLayout(recognition)
    return GroupLayout(recognition, {topic: partition_leaders(zk, topic) for topic in sorted(topics)})


def require_layout(zk: KazooClient, group: str) -> GroupLayout:
    """`read_layout`, refusing (exit 2) a group whose layout matches neither dialect."""
    layout = read_layout(zk, group)
    if layout.unrecognised is not None:
        raise RefusedError(unrecognised_message(group, layout.unrecognised))
    return layout


def unrecognised_message(group: str, detail: str) -> str:
    return f"group {group} is in no layout migrator knows: {detail}; refusing to guess how to read it"


def require_zookeeper_offsets(layout: GroupLayout, group: str, use: str) -> None:
    """Refuse `use` (a command that reads or writes ZooKeeper offsets) on a pykafka group, whose members
    commit only to Kafka."""
    if layout.dialect is Dialect.PYKAFKA:
        raise RefusedError(
            f"group {group} is a pykafka group: pykafka keeps no offsets in ZooKeeper (its members commit to Kafka "
            f"under the group id), so {use} is refused; its offsets are in Kafka only (--store kafka)"
        )


def with_pykafka_owners(zk: KazooClient, view: GroupView, layout: GroupLayout) -> GroupView:
    """`view` with a pykafka group's owner nodes as owner threads (the Scala reader skips them)."""
    if layout.dialect is not Dialect.PYKAFKA:
        return view
    owners = dict(view.owners)
    paths = GroupPaths(view.group)
    for topic in sorted(view.topics):
        for claim in read_owner_nodes(zk, paths, topic):
            if claim.spelling is layout.spelling:
                owners[TopicPartition(topic, claim.node.partition)] = f"{claim.owner}-0"
    return replace(view, owners=owners)
