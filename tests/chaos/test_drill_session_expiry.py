"""Drill 2: one bridge's ZooKeeper session expires, under ZooKeeper and under Kafka authority.

The server drops the victim's ephemerals (ids, migration ids, owners) at once, but the victim learns it
only on its next packet: until then it must not hand out records of partitions whose owner nodes are gone
(or another thread may claim them). Under ZooKeeper authority the others see a member leave and rejoin;
under Kafka authority the Kafka assignment does not change, so the victim simply reclaims its share. Either
way the group ends where it started and consumes on; duplicates are excused only on the victim's partitions
above its last commit. Under Kafka authority nobody else processes the victim's partitions meanwhile, and the
victim resumes where it stopped, not at its last commit (the records it processed after that commit are not
processed again): the only records processed twice are those in the victim's threads' hands when it dropped
its partitions, at most one per thread.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest
from kazoo.client import KazooState

from migrator.observe import after_commit
from tests.chaos.conftest import STREAMS
from tests.helpers.bridge import set_mode
from tests.helpers.wait import wait_until
from tests.helpers.zk import expire_session

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow]


@pytest.mark.parametrize("authority", ["zookeeper", "kafka"])
def test_expired_zookeeper_session_of_one_bridge(drill: Drill, authority: str) -> None:
    names = ["b0", "b1", "b2"]
    drill.start()
    # Under Kafka authority the victim commits only when it leaves: Kafka takes commits while ZooKeeper is away, so
    # a periodic one between the expiry and the drop would store its position and hide what the drill checks.
    victim = drill.bridge("b0", **({"auto.commit.interval.ms": "600000"} if authority == "kafka" else {}))
    drill.bridge("b1")
    drill.bridge("b2")
    if authority == "kafka":
        set_mode(drill.zk, drill.group, "kafka")
    drill.converge(authority, names)
    time.sleep(1.5)  # every bridge processes and auto-commits at least once
    states: list[KazooState] = []
    victim.conn._zk.add_listener(lambda s: states.append(s) and None)
    before = drill.owners()
    held = drill.owned_by("b0")
    committed = drill.committed(held)

    expire_session(drill.cluster.zookeeper, victim.conn._zk)
    expired_at = time.monotonic()
    wait_until(lambda: KazooState.LOST in states, 20, what="the victim to notice its expired session")
    drill.converge(authority, names)
    wait_until(lambda: drill.owners() == before, 30, what="every partition back with its owner before the expiry")
    recovered_s = time.monotonic() - expired_at
    resumed_s = drill.resumes()
    verdict = drill.finish(allow_duplicate=after_commit(committed, drill.cid("b0")))
    if authority == "kafka":
        again = [d for d in verdict.duplicates if not all(r.member == drill.cid("b0") for r in d.by)]
        assert not again, f"under Kafka authority only the victim processes its partitions: {again[:3]}"
        assert len(verdict.duplicates) <= STREAMS, (
            f"the victim processed {len(verdict.duplicates)} records twice (at most its {STREAMS} records in hand "
            f"at the expiry): it resumed at its last commit, not where it stopped; e.g. {verdict.duplicates[:3]}"
        )
    print(f"session expiry under {authority}: victim held {sorted(held)}; states {[str(s) for s in states]};"
          f" owners restored {recovered_s:.1f}s after the expiry, resumed {resumed_s:.1f}s later")  # fmt: skip
