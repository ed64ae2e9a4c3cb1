"""Two bridges in the pykafka dialect whose views of a partition's leader differ claim it under two names, on
the real ZooKeeper: owner nodes named after leaders do not exclude each other, so the later claim gives way
(`claim_or_give_way`), and a member renaming its node after a leader move keeps its older node while another
member's node of the partition exists (`rename_own_nodes`): at most one of them processes the partition."""

from __future__ import annotations

from typing import Any

from kazoo.client import KazooClient

from migrator.assign.pykafka import PykafkaProtocol
from migrator.protocol.partition import TopicPartition
from migrator.protocol.pykafka_layout import Spelling, claimed_first, encode_owner
from migrator.zk.paths import GroupPaths
from migrator.zk.pykafka_group import PykafkaNaming, PykafkaView, claim_or_give_way, partition_nodes, rename_own_nodes
from tests.helpers.zk import zk_client as zk_client_of

TOPIC = "t"
P2 = TopicPartition(TOPIC, 2)


def member(group: str, name: str, leader: int, node: str | None) -> tuple[PykafkaView, GroupPaths]:
    """A member's view of partition 2: its leader, and the owner node it knows of."""
    view = PykafkaView(TOPIC, Spelling.PYTHON3, PykafkaProtocol.RANGE, f"{group}_{name}")
    view.leaders = {2: leader}
    view.nodes = {2: node} if node else {}
    return view, GroupPaths(group, PykafkaNaming(view))


def hold(zk: KazooClient, paths: GroupPaths, view: PykafkaView, name: str) -> None:
    zk.ensure_path(paths.owners_topic(TOPIC))
    zk.create(f"{paths.owners_topic(TOPIC)}/{name}", encode_owner(view.consumer_id), ephemeral=True)


def test_a_claim_under_a_stale_leader_gives_way_to_the_holder_who_renamed(
    cluster: Any, zk_client: KazooClient, unique_group: str
) -> None:
    holder, holder_paths = member(unique_group, "b1", leader=2, node="1-2")  # it saw the leader move back
    late, late_paths = member(unique_group, "b0", leader=1, node="1-2")  # its snapshot predates that
    with zk_client_of(cluster) as other:
        hold(other, holder_paths, holder, "1-2")
        rename_own_nodes(other, holder_paths, holder)  # 2-2 created, then 1-2 deleted
        late_paths.released([P2])  # the node it waited for is gone

        result = claim_or_give_way(zk_client, late_paths, late, {P2: f"{late.consumer_id}-0"})

        assert result.claimed == {} and result.conflicts == {P2: holder.consumer_id}
        assert zk_client.get_children(late_paths.owners_topic(TOPIC)) == ["2-2"]
        assert late_paths.owner(TOPIC, 2).endswith("/2-2")  # its retry waits on the holder's node


def test_a_rename_keeps_the_older_node_while_a_later_claim_of_the_partition_exists(
    cluster: Any, zk_client: KazooClient, unique_group: str
) -> None:
    holder, holder_paths = member(unique_group, "b0", leader=2, node="1-2")
    late, late_paths = member(unique_group, "b1", leader=3, node=None)
    folder = holder_paths.owners_topic(TOPIC)
    with zk_client_of(cluster) as other:
        hold(zk_client, holder_paths, holder, "1-2")
        hold(other, late_paths, late, "3-2")  # created, not yet looked at its partition's other nodes

        rename_own_nodes(zk_client, holder_paths, holder)

        assert sorted(zk_client.get_children(folder)) == ["1-2", "3-2"] and holder.nodes[2] == "1-2"
        nodes = partition_nodes(other, folder, {2})[2]
        (ours,) = [n for n in nodes if n.owner == late.consumer_id]
        assert claimed_first(ours, nodes) is not None  # so the later claim gives way
        other.delete(f"{folder}/3-2")
        rename_own_nodes(zk_client, holder_paths, holder)  # alone again: renamed
        assert zk_client.get_children(folder) == ["2-2"] and holder.nodes[2] == "2-2"
