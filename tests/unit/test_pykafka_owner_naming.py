"""How a member in the pykafka dialect names the owner node it claims, waits on and releases when leaders move
(`migrator.zk.pykafka_group.PykafkaNaming`): the node it holds, else another member's, else the current
leader's name; once the nodes a claim waited for are gone, the current leader's name."""

from __future__ import annotations

from migrator.assign.pykafka import PykafkaProtocol
from migrator.protocol.partition import TopicPartition
from migrator.protocol.pykafka_layout import OwnerNode, Spelling
from migrator.zk.paths import GroupPaths
from migrator.zk.pykafka_group import OwnerClaim, PykafkaNaming, PykafkaView, names_by_partition

ME = "g_me"


def view(leaders: dict[int, int], nodes: dict[int, str]) -> PykafkaView:
    v = PykafkaView("t", Spelling.PYTHON3, PykafkaProtocol.RANGE, ME)
    v.leaders, v.nodes = dict(leaders), dict(nodes)
    return v


def test_our_own_node_wins_over_a_node_another_member_left_under_an_old_leader() -> None:
    claims = [
        OwnerClaim(Spelling.PYTHON3, OwnerNode(1, 0), "host:old"),
        OwnerClaim(Spelling.PYTHON3, OwnerNode(2, 0), ME),
        OwnerClaim(Spelling.PYTHON3, OwnerNode(1, 1), "host:other"),
    ]
    assert names_by_partition(claims, ME) == {0: "2-0", 1: "1-1"}


def test_a_claim_waits_on_the_existing_node_then_creates_the_current_leaders_name() -> None:
    v = view(leaders={0: 2, 1: 2}, nodes={0: "1-0"})
    paths = GroupPaths("g", PykafkaNaming(v))
    assert paths.owner("t", 0) == "/consumers/g/owners/b't'/1-0"  # held by someone: wait on that node
    assert paths.owner("t", 1) == "/consumers/g/owners/b't'/2-1"  # free: the current leader's name
    paths.released([TopicPartition("t", 0), TopicPartition("other", 1)])
    assert paths.owner("t", 0) == "/consumers/g/owners/b't'/2-0"
