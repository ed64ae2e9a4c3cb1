"""Drill 1: `kill -9` of a bridge in the middle of a switch to Kafka authority.

The victim dies ~50 ms after the mode write, typically between releasing and claiming: its owner nodes
stay until its ZooKeeper session expires and its embedded member stays in the Kafka group until its Kafka
session expires. The survivors must not touch its partitions before both are gone, then converge under
Kafka authority and consume on. Duplicates are excused only on the partitions the victim held when it died,
from the offset it had committed.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from tests.helpers.bridge import set_mode

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

from migrator.observe import after_commit

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow]


def test_kill_9_of_a_bridge_mid_switch(drill: Drill) -> None:
    drill.start()
    drill.spawn_bridge("b0")
    drill.bridge("b1")
    drill.bridge("b2")
    drill.converge("zookeeper", ["b0", "b1", "b2"])
    time.sleep(1.5)  # every bridge processes and auto-commits at least once
    set_mode(drill.zk, drill.group, "kafka")
    time.sleep(0.05)
    drill.kill("b0")
    killed_at = time.monotonic()
    # the dead session's owner nodes stay until it expires, and nobody else can commit those partitions
    dead = drill.owned_by("b0")
    committed = drill.committed(dead)

    drill.converge("kafka", ["b1", "b2"], timeout=45)
    converged_s = time.monotonic() - killed_at
    resumed_s = drill.resumes()
    drill.finish(allow_duplicate=after_commit(committed, f"{drill.cid('b0')}@"))
    print(f"kill -9 mid-switch: victim held {sorted(dead)}; kafka convergence {converged_s:.1f}s after the kill,"
          f" resumed {resumed_s:.1f}s later")  # fmt: skip
