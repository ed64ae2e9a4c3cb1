"""Drill 12: bridges started while Kafka is down find it when it comes back.

An application restarted during a broker outage (or deployed with a stale broker first in its bootstrap
list) must start, wait, and join once Kafka answers, without the operator doing anything. The group obeys
Kafka with two bridges already running; the only broker stops; while it is down two more bridges start in
their own processes, one with the right bootstrap servers and one whose list starts with an address nobody
listens on (`127.0.0.1:1`). Both must come up (print `ready`) while Kafka is down, and no member process may
die. After `DOWN_S` the broker returns and, within `RESUME_BOUND_S`, all four bridges obey Kafka, own every
partition between them and process records produced after the restart. No session expires: no duplicate.

A connector configured without bootstrap servers finds the brokers under `/brokers/ids`, as Scala's does; one
started while no broker is registered there (the only broker down) waits for one within its connect timeout
instead of failing `create_message_streams`, and consumes once the broker is back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from migrator.zk.paths import BROKER_IDS
from tests.helpers.member_proc import MemberProcess
from tests.helpers.wait import wait_until

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]

DOWN_S = 20.0
RESUME_BOUND_S = 60.0  # broker ready -> converged under Kafka with all four, every partition processed anew


def test_bridges_started_while_kafka_is_down(drill_on: Callable[..., Drill]) -> None:
    drill = drill_on()
    drill.start()
    drill.spawn_settled(["b0", "b1"])
    time.sleep(1.5)

    def start_two() -> None:
        drill.spawn_bridge("late")
        stale_first = f"127.0.0.1:1,{drill.cluster.bootstrap_servers}"
        drill.spawn_bridge("stale", **{"coordination.migration.bootstrap.servers": stale_first})
        # registered in ZooKeeper while Kafka is away: the group waits for them rather than going on without
        wait_until(lambda: {drill.cid("late"), drill.cid("stale")} <= set(drill.zk.get_children(drill.paths.ids)),
                   10, what="the late bridges registered")  # fmt: skip

    outage = drill.outage("broker-1", DOWN_S, while_down=start_two)
    names = ["b0", "b1", "late", "stale"]
    drill.converge("kafka", names, timeout=RESUME_BOUND_S)
    drill.resumes(timeout=max(1.0, RESUME_BOUND_S - outage.since_ready()))
    resumed_s = outage.since_ready()
    verdict = drill.finish()
    print(f"bridges started while Kafka was down: broker down {outage.down_s:.1f}s, restart {outage.restart_s:.1f}s,"
          f" resumed {resumed_s:.1f}s after it was ready; {verdict.counts()}")  # fmt: skip


UNREGISTERED_S = 8.0  # the member waits at least this long with no broker registered
CONNECT_TIMEOUT_MS = 90_000  # the member's longer connect timeout: how long it may wait for a broker


def test_connector_started_before_any_broker_is_registered(drill_on: Callable[..., Drill]) -> None:
    drill = drill_on()
    drill.start()
    started: list[MemberProcess | AssertionError] = []

    def spawn() -> None:
        try:  # ready once create_message_streams returned, i.e. after a broker registered again
            started.append(drill.spawn("early", {"zookeeper.connection.timeout.ms": str(CONNECT_TIMEOUT_MS)},
                                       ready_timeout_s=CONNECT_TIMEOUT_MS / 1000 + 30))  # fmt: skip
        except AssertionError as exc:
            started.append(exc)

    spawner = threading.Thread(target=spawn, daemon=True)

    def start_while_unregistered() -> None:
        wait_until(lambda: not drill.zk.get_children(BROKER_IDS), 30, what="the broker's registration to go")
        spawner.start()

    outage = drill.outage("broker-1", UNREGISTERED_S, while_down=start_while_unregistered)
    spawner.join(CONNECT_TIMEOUT_MS / 1000 + 60)
    assert started and isinstance(started[0], MemberProcess), f"the connector did not start: {started}"
    drill.converge("zookeeper", [], legacy=["early"], timeout=RESUME_BOUND_S)
    drill.resumes(timeout=max(1.0, RESUME_BOUND_S - outage.since_ready()))
    verdict = drill.finish()
    print(f"connector started with no broker registered: broker down {outage.down_s:.1f}s, restart "
          f"{outage.restart_s:.1f}s, resumed within {RESUME_BOUND_S:.0f}s of it; {verdict.counts()}")  # fmt: skip
