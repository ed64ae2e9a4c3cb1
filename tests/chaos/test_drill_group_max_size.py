"""Drill 9: the Kafka group is full (GROUP_MAX_SIZE_REACHED, error 81) for one of three bridges.

With `group.max.size=2` one embedded member is refused. Obeying Kafka then would leave that bridge's share to
nobody (or to two masters), so every bridge must obey ZooKeeper, say so, and keep consuming without a crash.
When a bridge that *is* in the Kafka group leaves, the refused one must get in by itself and the group
return to Kafka authority, with no operator action and no duplicate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from tests.helpers.bridge import set_mode
from tests.helpers.kafka import admin

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow]


def kafka_members(drill: Drill) -> set[str]:
    """Client ids of the embedded members in the Kafka group (each is its bridge's consumerId)."""
    description = admin(drill.cluster).describe_consumer_groups([drill.group])[drill.group].result(10)
    return {m.client_id for m in description.members}


def test_group_max_size_reached_keeps_zookeeper_authority_until_a_bridge_leaves(
    drill_on: Callable[..., Drill],
) -> None:
    drill = drill_on(group_max_size=2)
    names = ["b0", "b1", "b2"]
    drill.start()
    set_mode(drill.zk, drill.group, "kafka")
    for name in names:
        drill.bridge(name)  # the refused one waits up to JOIN_WAIT_S for a Kafka assignment, then obeys ZooKeeper
    drill.settle("zookeeper", names)
    assert {m.conn.authority for m in drill.members.values()} == {"zookeeper"}
    in_group = kafka_members(drill)
    assert len(in_group) == 2, in_group
    reasons = {cid: p.reason for cid, p in drill.published().items()}
    assert all("Kafka" in r or "not in the Kafka group" in r for r in reasons.values()), reasons
    drill.resumes()
    generations = {cid: p.generation for cid, p in drill.published().items()}
    time.sleep(3.0)
    republished = {cid[len(drill.group) + 1 :]: p.generation - generations.get(cid, 0)
                   for cid, p in drill.published().items()}  # fmt: skip

    leaver = next(n for n in names if drill.cid(n) in in_group)
    left_at = time.monotonic()
    drill.leave(leaver)
    rest = [n for n in names if n != leaver]
    drill.settle("kafka", rest, timeout=50)
    returned_s = time.monotonic() - left_at
    assert kafka_members(drill) == {drill.cid(n) for n in rest}
    resumed_s = drill.resumes()
    verdict = drill.finish()
    assert not verdict.duplicates, verdict.summary()
    print(f"group.max.size=2: reasons {sorted(set(reasons.values()))}; back to kafka {returned_s:.1f}s after"
          f" {leaver} left, resumed {resumed_s:.1f}s later; re-publications in 3 s: {republished}")  # fmt: skip
