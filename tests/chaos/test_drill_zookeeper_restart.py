"""Drill 3: ZooKeeper restarts under a loaded group (on a dedicated cluster: the shared one must not see it).

While ZooKeeper is down no connector can prove it owns anything, so none may hand out a record: the owner
check of the verdict covers records processed outside an ownership, and the drill also requires that no
record *starts* while ZooKeeper is down (after a short grace for the connection loss to be noticed). When
ZooKeeper is back the sessions either survive or expire; either way the group must own every partition again
under the same authority and consume what was produced meanwhile.

Nothing is processed twice while every session survives. A session expires when the restart outlasts the
session timeout (a loaded machine starts ZooKeeper slowly); that bridge then re-registers and resumes from its
last commit, so only its records at or above the offset committed at the stop may be processed again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from kazoo.protocol.states import KazooState

from migrator.observe import after_commit
from tests.helpers.bridge import set_mode

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow]

GRACE_NS = 500_000_000  # time for a connector to see its connection drop (the TCP close is immediate)


@pytest.mark.parametrize("authority", ["zookeeper", "kafka"])
def test_zookeeper_restart(drill_on: Callable[..., Drill], authority: str) -> None:
    drill = drill_on()
    names = ["b0", "b1", "b2"]
    drill.start()
    members = {name: drill.bridge(name) for name in names}
    if authority == "kafka":
        set_mode(drill.zk, drill.group, "kafka")
    drill.converge(authority, names)
    time.sleep(1.0)
    expired: set[str] = set()
    for name, member in members.items():
        member.conn._zk.add_listener(lambda state, name=name: expired.add(name) if state == KazooState.LOST else None)
    committed = drill.committed(range(drill.partitions))

    down_ns = time.time_ns()
    drill.cluster.stop_process("zookeeper")
    stopped_ns = time.time_ns()
    time.sleep(2.0)
    up_ns = time.time_ns()
    drill.cluster.start_process("zookeeper")
    restarted_s = (time.time_ns() - down_ns) / 1e9

    handed_out_while_down = [r for r in drill.records() if stopped_ns + GRACE_NS <= r.start_ns <= up_ns]
    assert not handed_out_while_down, f"{len(handed_out_while_down)} records handed out while ZooKeeper was down," \
        f" e.g. {handed_out_while_down[:3]}"  # fmt: skip
    drill.converge(authority, names)
    resumed_s = drill.resumes()
    drill.finish(allow_duplicate=lambda d: any(after_commit(committed, drill.cid(name))(d) for name in expired))
    print(f"ZooKeeper restart under {authority}: down {restarted_s:.1f}s, resumed {resumed_s:.1f}s after it was back;"
          f" sessions expired: {sorted(expired) or 'none'}")  # fmt: skip
