"""Which ZooKeeper events a bridge holds back until the Kafka assignment that ends a rebalance
(`gating.defers`): only those that could not change anything, and never for long."""

from __future__ import annotations

import pytest

from migrator.coordination.gating import DEFER_S, defers
from migrator.protocol.events import Trigger


def test_a_registration_during_a_kafka_rebalance_waits_for_the_assignment() -> None:
    assert defers({Trigger.IDS}, rebalancing_s=0.05, mode_is_kafka=True, holds=False)
    assert defers({Trigger.MIGRATION_IDS, Trigger.RETRY}, rebalancing_s=0.05, mode_is_kafka=True, holds=False)


@pytest.mark.parametrize(
    ("reasons", "rebalancing_s", "mode_is_kafka", "holds"),
    [
        ({Trigger.MODE}, 0.05, True, False),  # the operator's word is evaluated at once
        ({Trigger.IDS, Trigger.MODE}, 0.05, True, False),
        ({Trigger.IDS}, None, True, False),  # no Kafka rebalance under way
        ({Trigger.IDS}, DEFER_S, True, False),  # the assignment is overdue: evaluate after all
        ({Trigger.IDS}, 0.05, False, False),  # mode zookeeper: ZooKeeper's assignment is obeyed, whatever Kafka does
        ({Trigger.IDS}, 0.05, True, True),  # still holds partitions: the evaluation may release them
        (set(), 0.05, True, False),
    ],
)
def test_anything_that_could_change_the_outcome_is_evaluated_now(
    reasons: set[Trigger], rebalancing_s: float | None, mode_is_kafka: bool, holds: bool
) -> None:
    assert not defers(reasons, rebalancing_s=rebalancing_s, mode_is_kafka=mode_is_kafka, holds=holds)
