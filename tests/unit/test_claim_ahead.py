"""A bridge that obeys Kafka begins claiming a new Kafka assignment while its decision waits for the Kafka
group's description, and only there: the owner nodes' creates overlap that round trip.

The worker over in-memory collaborators (the creates and their undoing on a real ZooKeeper are the
integration and chaos tests' part): which decisions claim ahead, and that the claim is under way before
the group is described.
"""

from __future__ import annotations

import threading

import pytest

from migrator.coordination.gating import claims_ahead
from migrator.protocol.codecs import Authority
from migrator.protocol.events import Changed, KafkaAssigned, KafkaRevoked, Trigger
from migrator.protocol.kafka import KafkaGroup
from migrator.protocol.partition import TopicPartition
from tests.helpers.coordination_fakes import FakeAdmin, FakeHoldings, rig, snapshot

T = [TopicPartition("t", p) for p in range(4)]
KAFKA, ZOOKEEPER = Authority.KAFKA, Authority.ZOOKEEPER
AHEAD_WAIT_S = 10.0  # bounds the fake describe's wait for the claim, so a worker that never begins one ends


def test_a_kafka_assignment_obeyed_as_before_claims_ahead() -> None:
    assert claims_ahead({Trigger.KAFKA_ASSIGNMENT}, prior=KAFKA, mode_is_kafka=True, all_bridges=True)
    assert claims_ahead({Trigger.KAFKA_ASSIGNMENT, Trigger.IDS}, prior=KAFKA, mode_is_kafka=True, all_bridges=True)


@pytest.mark.parametrize(
    ("triggers", "prior", "mode_is_kafka", "all_bridges"),
    [
        ({Trigger.KAFKA_ASSIGNMENT}, ZOOKEEPER, True, True),  # a switch to Kafka: previous owners still release
        ({Trigger.KAFKA_ASSIGNMENT, Trigger.START}, ZOOKEEPER, True, True),  # a joining bridge's first claim
        ({Trigger.KAFKA_ASSIGNMENT, Trigger.MODE}, KAFKA, True, True),  # an operator's mode write
        ({Trigger.KAFKA_ASSIGNMENT}, KAFKA, False, True),  # mode zookeeper: ZooKeeper's assignment follows
        ({Trigger.KAFKA_ASSIGNMENT}, KAFKA, True, False),  # a legacy member registered: ZooKeeper's, too
        ({Trigger.IDS}, KAFKA, True, True),  # no new Kafka assignment
        ({Trigger.KAFKA_LOST}, KAFKA, True, True),
    ],
)
def test_every_other_decision_claims_after_deciding(
    triggers: set[Trigger], prior: Authority, mode_is_kafka: bool, all_bridges: bool
) -> None:
    assert not claims_ahead(triggers, prior=prior, mode_is_kafka=mode_is_kafka, all_bridges=all_bridges)


class _DescribesOnceClaimed(FakeAdmin):
    """DescribeGroups that answers once the worker has begun a claim ahead (or after `AHEAD_WAIT_S`), noting
    what was being claimed when it answered."""

    def __init__(self, members: dict[str, tuple[TopicPartition, ...]]) -> None:
        super().__init__(members)
        self.holdings = FakeHoldings()  # the rig's, once it is built
        self.blocking = False
        self.claimed_before: list[dict[TopicPartition, str]] = []

    def describe_group(self, group: str) -> KafkaGroup:
        if self.blocking:
            pause = threading.Event()  # never set: a sleep
            for _ in range(int(AHEAD_WAIT_S / 0.01)):
                if self.holdings.ahead:
                    break
                pause.wait(0.01)
            self.claimed_before = [dict(claim) for claim in self.holdings.ahead]
        return super().describe_group(group)


def test_after_an_eager_kafka_rebalance_the_owner_nodes_are_claimed_before_the_group_is_described() -> None:
    admin = _DescribesOnceClaimed({"g_b0": tuple(T)})
    r = rig("g_b0", snapshot({"g_b0": {"t": 2}}, bridges={"g_b0"}, mode=b"kafka"), bridge=True, admin=admin)
    admin.holdings = r.holdings
    r.worker.step([KafkaAssigned(tuple(T)), Changed(Trigger.START)])
    assert r.worker.state.authority is KAFKA and not r.holdings.ahead  # a start claims after deciding
    owned = dict(r.holdings.owned)
    r.worker.step([KafkaRevoked()])
    assert not r.holdings.owned
    admin.blocking = True
    r.worker.step([KafkaAssigned(tuple(T))])
    assert admin.claimed_before == [owned]  # the whole assignment, on the same threads as the decision's
    assert r.holdings.owned == owned and r.worker.state.authority is KAFKA
