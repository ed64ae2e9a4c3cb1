"""Drill 14: a 3-server ZooKeeper ensemble loses its leader (kill -9, 20 s), then its quorum (2 of 3, 20 s).

Production ZooKeeper is an ensemble, and its usual faults are one server dying (often the leader, which
forces an election) and, rarer, a majority lost. One cluster with `zookeepers=3` serves two groups, one
obeying Kafka and one ZooKeeper, three bridges each in their own processes.

Leader killed: the other two elect a new leader within a second or two and every client moves to a live
server well inside its 4 s session timeout, so no session may be lost (every bridge's `ids` node keeps its
session), no record may be processed twice and no member process may die.

Quorum lost: the remaining server stops serving, exactly like drill 11's ZooKeeper outage: no bridge may
hand out a record from `GRACE_NS` after the stop until the restart, and once two servers are back both
groups own every partition again under their authority and consume records produced after the restart.
Duplicates are allowed only as in drill 11: sessions may have expired, so records processed after the last
commit may be processed again, at or above the offset committed at the stop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from migrator.observe import after_commit
from tests.chaos.conftest import without_zookeeper
from tests.helpers.wait import wait_until

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

DOWN_S = 20.0  # bridges' zookeeper.session.timeout.ms is 4 s (tests.helpers.member_proc)
GRACE_NS = 500_000_000  # the last server drops its clients' connections at once when it loses the quorum
RESUME_BOUND_S = 60.0  # servers ready -> every partition of both groups processed a record produced after it
RATE = 150.0  # per group


def sessions(d: Drill, names: list[str]) -> dict[str, int]:
    """The ZooKeeper session that owns each bridge's registration (`ids/<consumer id>`)."""
    stats = {n: d.zk.exists(d.paths.member(d.cid(n))) for n in names}
    return {n: stat.ephemeralOwner if stat else 0 for n, stat in stats.items()}


def test_ensemble_leader_killed_then_quorum_lost(both_modes: Callable[..., dict[str, Drill]]) -> None:
    names = ["b0", "b1", "b2"]
    drills = both_modes(names, RATE, zookeepers=3)
    kafka, others = drills["kafka"], [drills["zookeeper"]]
    cluster = kafka.cluster

    before = {a: sessions(d, names) for a, d in drills.items()}
    leader = cluster.zookeeper_leader()
    assert leader is not None, "the ensemble has no leader"
    killed = kafka.outage(leader, DOWN_S, alongside=others, kill=True)
    wait_until(lambda: cluster.zookeeper_leader() is not None, 30, what="the ensemble to have a leader again")
    after = {a: sessions(d, names) for a, d in drills.items()}
    assert after == before, f"sessions changed when the leader {leader} was killed: {before} -> {after}"
    for d in drills.values():
        d.resumes(timeout=RESUME_BOUND_S)
    leader_s = killed.since_ready()

    survivor = cluster.zookeeper_leader()
    lost = [n for n in cluster.zookeeper_names if n != survivor][:2]
    outage, committed = without_zookeeper(drills, names, lost, DOWN_S, GRACE_NS, RESUME_BOUND_S)
    quorum_s = outage.since_ready()
    # no duplicate may come from the leader's death: they are excused only at or above the commit at the quorum loss
    verdicts = {a: d.finish(allow_duplicate=after_commit(committed[a], d.cid(""))).counts() for a, d in drills.items()}
    print(f"ensemble: leader {leader} killed {killed.down_s:.1f}s, resumed {leader_s:.1f}s after it was back;"
          f" quorum lost ({lost}) {outage.down_s:.1f}s, resumed {quorum_s:.1f}s after; {verdicts}")  # fmt: skip
