"""Drill 13: the group's coordinator moves back to a restarted broker, and a bridge is redeployed afterwards.

After a broker restart, the controller's preferred-leader election (`auto.leader.rebalance.enable`, every
`leader.imbalance.check.interval.seconds`: 300 s by default, 5 s here) gives the restarted broker its
partitions back, `__consumer_offsets` ones included: the group's coordinator moves again, this time away from a
broker that stays up. A bridge redeployed during the outage and again after it makes every bridge describe the
Kafka group each time (every membership change is a Kafka rebalance).

librdkafka's AdminClient caches the coordinator it looked up during the outage and never forgets it, even when
that broker answers NOT_COORDINATOR. Before the fix, every DescribeConsumerGroups of the old bridges then failed
for good: they fell back to ZooKeeper's assignment while the redeployed one obeyed Kafka, and partitions between
the two assignments had no owner (the 20-minute soak: 5 partitions idle for 96 s, until an operator's mode flip).
The group must settle under Kafka authority after each redeploy, consume within `RESUME_BOUND_S`, lose nothing,
process nothing twice (every stop is a clean SIGTERM) and never have two owners of a partition.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from tests.helpers.kafka import COORDINATOR_RETURNS, coordinator
from tests.helpers.wait import wait_until

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(420)]

DOWN_S = 15.0
RESUME_BOUND_S = 60.0  # a redeploy -> the group settled under Kafka, every partition processed a new record


def test_bridges_follow_the_coordinator_back_to_a_restarted_broker(drill_on: Callable[..., Drill]) -> None:
    drill = drill_on(brokers=3, extra_broker_config=COORDINATOR_RETURNS)
    drill.start(replication=3)
    names = drill.spawn_settled(["b0", "b1", "b2"])
    home = coordinator(drill.cluster.bootstrap_servers, drill.group)
    assert home is not None, "the group has no coordinator"

    def redeploy() -> float:
        """Restart bridge b2 cleanly, as a deploy does; seconds until the group settled and consumes again."""
        began = time.monotonic()
        drill.leave("b2")
        drill.spawn_bridge("b2")
        drill.settle("kafka", names, timeout=RESUME_BOUND_S)
        drill.resumes(timeout=max(10.0, RESUME_BOUND_S - (time.monotonic() - began)))
        return time.monotonic() - began

    timings: list[float] = []
    drill.outage(f"broker-{home}", DOWN_S, while_down=lambda: timings.append(redeploy()))
    wait_until(lambda: coordinator(drill.cluster.bootstrap_servers, drill.group) == home, 90, interval=1.0,
               what=f"the controller to move the group's coordinator back to broker-{home}")  # fmt: skip
    timings.append(redeploy())
    verdict = drill.finish()
    print(f"coordinator back on broker-{home}: redeploy during the outage settled in {timings[0]:.1f}s, after it"
          f" in {timings[1]:.1f}s; {verdict.counts()}")  # fmt: skip
