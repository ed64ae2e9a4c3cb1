"""The refusal of a group whose legacy layout (dialect) migrator cannot read, as the operator commands say it.

The group reader (`migrator.zk.group_reader`) recognises a group's dialect in the same read as its view. A
group whose nodes match neither dialect (or both) is refused with the node that decided it, never read
with a guessed codec; a command that reads or writes ZooKeeper offsets is refused on a dialect that keeps
none there.
"""

from __future__ import annotations

from migrator.errors import RefusedError
from migrator.protocol.layout_dialect import GroupLayout
from migrator.zk.group_reader import read_group_with_layout
from migrator.zk.session import ZkSession

__all__ = ["GroupLayout", "refuse_unrecognised", "require_layout", "require_zookeeper_offsets", "unrecognised_message"]


def unrecognised_message(group: str, detail: str) -> str:
    return f"group {group} is in no layout migrator knows: {detail}; refusing to guess how to read it"


def refuse_unrecognised(layout: GroupLayout, group: str) -> GroupLayout:
    """`layout`, refusing (exit 2) a group whose layout matches neither dialect."""
    if layout.unrecognised is not None:
        raise RefusedError(unrecognised_message(group, layout.unrecognised))
    return layout


def require_layout(zk: ZkSession, group: str) -> GroupLayout:
    """The group's layout (one read of the group), refusing (exit 2) one that matches neither dialect."""
    return refuse_unrecognised(read_group_with_layout(zk, group)[1], group)


def require_zookeeper_offsets(layout: GroupLayout, group: str, use: str) -> None:
    """Refuse `use` (a command that reads or writes ZooKeeper offsets) on a group whose dialect commits only to
    Kafka."""
    if layout.dialect is not None and not layout.dialect.offsets_in_zookeeper:
        raise RefusedError(
            f"group {group} is a {layout.dialect.value} group: {layout.dialect.value} keeps no offsets in ZooKeeper "
            f"(its members commit to Kafka under the group id), so {use} is refused; its offsets are in Kafka only "
            "(--store kafka)"
        )
