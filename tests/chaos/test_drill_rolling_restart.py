"""Drill 10: a rolling restart of all three brokers, one at a time, each down about 15 s, under Kafka authority.

What an operator does to upgrade or reconfigure a cluster. The cluster is set up as production clusters
are: the topic and `__consumer_offsets` are replicated three times, so when a broker stops (a controlled
shutdown) its partition leaders and the group coordinator move to the other two. The group keeps its Kafka
authority and must keep consuming *while* each broker is down: every record Kafka acknowledged in the first
`ACCEPTED_S` of the outage is processed before the outage ends. (The producer itself may stall for a while
on a partition whose leader moved, so the drill demands only what Kafka accepted, and that it accepted
something.) Each broker is restarted only once the group consumes everything again (`RESUME_BOUND_S` after
the restart), as a careful operator waits for health before the next one. No member process may die; no
session expires, so nothing may be processed twice.

This replaces the former 4 s coordinator-restart drill: the coordinator's broker is one of the three
restarted here, for longer, and drill 4 covers the coordinator being unavailable altogether.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(420)]

DOWN_S = 15.0
ACCEPTED_S = 5.0  # what Kafka accepts this long into an outage is processed before the outage ends
RESUME_BOUND_S = 45.0  # broker ready -> group converged under Kafka, every partition processed a new record
REPLICATED = {"offsets.topic.replication.factor": 3, "offsets.topic.num.partitions": 4}


def test_rolling_restart_of_three_brokers(drill_on: Callable[..., Drill]) -> None:
    drill = drill_on(brokers=3, extra_broker_config=REPLICATED)
    drill.start(replication=3)
    names = drill.spawn_settled(["b0", "b1", "b2"])
    time.sleep(1.5)  # every bridge processes and commits at least once

    def keeps_consuming() -> float:
        """Right after a broker stopped: what Kafka accepts in the next `ACCEPTED_S` is processed meanwhile."""
        at_stop = drill.high_watermarks()
        time.sleep(ACCEPTED_S)
        accepted = drill.high_watermarks()
        assert sum(accepted.values()) > sum(at_stop.values()), "Kafka accepted nothing while a broker was down"
        what = "records Kafka accepted while a broker was down to be processed before it is back"
        return ACCEPTED_S + drill.processes(accepted, DOWN_S - ACCEPTED_S - 1.0, what)

    timings = []
    consumed_while_down: list[float] = []
    for broker in ("broker-1", "broker-2", "broker-3"):
        outage = drill.outage(broker, DOWN_S, while_down=lambda: consumed_while_down.append(keeps_consuming()))
        drill.converge("kafka", names, timeout=RESUME_BOUND_S)
        drill.resumes(timeout=max(1.0, RESUME_BOUND_S - outage.since_ready()))
        timings.append(f"{broker}: consumed what Kafka accepted {consumed_while_down[-1]:.1f}s after its stop, down"
                       f" {outage.down_s:.1f}s, restart {outage.restart_s:.1f}s, resumed {outage.since_ready():.1f}s"
                       " after it was ready")  # fmt: skip
    verdict = drill.finish()
    print(f"rolling restart: {'; '.join(timings)}; {verdict.counts()}")
