"""Which of several owner nodes of one partition keeps it, when members' views of its leader differ and their
leader-named nodes therefore do not exclude each other (`claimed_first`, `rename_waits`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from migrator.protocol.pykafka_layout import PartitionNode, claimed_first, rename_waits


def test_the_later_claim_gives_way_to_the_earlier_one_and_the_earlier_one_keeps() -> None:
    first, later = PartitionNode("2-2", "b1", 10), PartitionNode("1-2", "b0", 11)
    assert claimed_first(later, [first, later]) == first
    assert claimed_first(first, [first, later]) is None


def test_a_members_own_older_node_is_no_reason_to_give_way() -> None:
    old, new = PartitionNode("1-2", "b0", 10), PartitionNode("2-2", "b0", 11)
    assert claimed_first(new, [old, new]) is None


def test_a_rename_waits_while_another_members_node_of_the_partition_exists() -> None:
    ours_old, ours_new = PartitionNode("1-2", "b1", 10), PartitionNode("2-2", "b1", 12)
    assert not rename_waits("b1", [ours_old, ours_new])
    assert rename_waits("b1", [ours_old, ours_new, PartitionNode("3-2", "b0", 11)])


@given(st.lists(st.sampled_from(["b0", "b1", "b2", "vm:x"]), min_size=1, max_size=8))
def test_exactly_the_owner_of_the_earliest_node_keeps_the_partition(owners: list[str]) -> None:
    nodes = [PartitionNode(f"{i}-0", owner, created) for created, (i, owner) in enumerate(enumerate(owners))]
    keeping = {n.owner for n in nodes if claimed_first(n, nodes) is None}
    assert keeping >= {nodes[0].owner}
    assert all(claimed_first(n, nodes) is not None for n in nodes if n.owner != nodes[0].owner)
