"""Drill 4: the broker that is the group coordinator stops and restarts while the group obeys Kafka.

Three brokers and a topic replicated three times, so the topic's partition leaders move at once. The dev
cluster keeps `__consumer_offsets` unreplicated, so the group's offsets partition lives on the coordinator
and the coordinator cannot move while that broker is down: Kafka coordination (and Kafka commits) are then
unavailable, and the bridges may keep their partitions or fall back to ZooKeeper authority. The drill accepts
either while the broker is down but requires the safety properties throughout and, once the broker is back,
a group that converges under Kafka authority again and consumes what was produced meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from tests.helpers.bridge import set_mode
from tests.helpers.kafka import admin
from tests.helpers.wait import wait_until

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow]

DOWN_S = 4.0  # several embedded-member polls and heartbeats without a coordinator


def coordinator_of(drill: Drill) -> int:
    description = admin(drill.cluster).describe_consumer_groups([drill.group])[drill.group].result(10)
    return int(description.coordinator.id)


def test_group_coordinator_broker_restart_under_kafka_authority(drill_on: Callable[..., Drill]) -> None:
    drill = drill_on(brokers=3)
    names = ["b0", "b1", "b2"]
    drill.start(replication=3)
    for name in names:
        drill.bridge(name)
    set_mode(drill.zk, drill.group, "kafka")
    drill.converge("kafka", names)
    time.sleep(1.5)  # every bridge processes and commits at least once

    coordinator = wait_until(lambda: coordinator_of(drill), 20, what="the group's coordinator")
    broker = f"broker-{coordinator}"
    began = time.monotonic()
    drill.cluster.stop_process(broker)
    stopped_at, stopped_ns = time.monotonic(), time.time_ns()
    seen: set[tuple[str, str]] = set()
    while time.monotonic() - stopped_at < DOWN_S:
        seen |= {(cid, p.authority.value) for cid, p in drill.published().items()}
        time.sleep(0.2)
    restart_ns = time.time_ns()
    processed_while_down = sum(1 for r in drill.records() if stopped_ns <= r.start_ns <= restart_ns)
    drill.cluster.start_process(broker)
    restarted_at = time.monotonic()

    drill.converge("kafka", names, timeout=60)
    converged_s = time.monotonic() - restarted_at
    resumed_s = drill.resumes()
    verdict = drill.finish()
    print(f"coordinator {broker} restart: authorities published while down {sorted(seen)};"
          f" stop took {stopped_at - began:.1f}s, start {restarted_at - stopped_at - DOWN_S:.1f}s;"
          f" {processed_while_down} records processed while it was down; kafka convergence {converged_s:.1f}s after it,"
          f" resumed {resumed_s:.1f}s later; {verdict.counts()}")  # fmt: skip
