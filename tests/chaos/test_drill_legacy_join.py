"""Drill 6: a legacy connector (migration disabled) joins while the group obeys Kafka, then leaves.

It knows nothing of the Kafka group, so the bridges must fall back to ZooKeeper authority and share the
partitions with it by the legacy range assignment; once it leaves they return to Kafka by themselves. Both
are clean transitions: nothing lost, nothing processed twice, no partition worked by two threads.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from tests.helpers.bridge import set_mode
from tests.helpers.wait import wait_until

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow]


def test_legacy_connector_joining_in_kafka_mode(drill: Drill) -> None:
    bridges = ["b0", "b1"]
    drill.start()
    for name in bridges:
        drill.bridge(name)
    set_mode(drill.zk, drill.group, "kafka")
    drill.converge("kafka", bridges)

    joined_at = time.monotonic()
    drill.legacy("legacy")
    drill.settle("zookeeper", bridges, legacy=["legacy"])
    fallback_s = time.monotonic() - joined_at
    # range over 6 sorted threads (b0-0, b0-1, b1-0, b1-1, legacy-0, legacy-1) and 8 partitions: 2,2,1,1,1,1
    wait_until(lambda: len(drill.owned_by("legacy")) == 2, 30, what="the legacy connector owns its range share")
    reasons = {p.reason for cid, p in drill.published().items() if cid != drill.cid("legacy")}
    assert all(f"legacy connector registered: {drill.cid('legacy')}" in r for r in reasons), reasons
    drill.resumes()

    left_at = time.monotonic()
    drill.leave("legacy")
    drill.settle("kafka", bridges)
    return_s = time.monotonic() - left_at
    assert drill.zk.get(drill.paths.mode)[0] == b"kafka"  # the fallback never rewrote the operator's toggle
    resumed_s = drill.resumes()
    verdict = drill.finish()
    assert not verdict.duplicates, verdict.summary()
    print(f"legacy join: zookeeper after {fallback_s:.1f}s, kafka {return_s:.1f}s after it left,"
          f" resumed {resumed_s:.1f}s later")  # fmt: skip
