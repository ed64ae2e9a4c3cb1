"""Drills 7 and 8: bad input written by someone else never corrupts state (CONTRACT §6.5).

7. Garbage in the mode node (a typo, binary bytes, nothing): only the exact value `kafka` means Kafka, so
   the authority stays or falls to ZooKeeper, each bridge publishes why (naming the value), the group keeps
   consuming, and nobody "repairs" the operator's node.
8. A malformed `ids` node from a foreign process: a rebalance cannot be computed without every member's
   subscription, so the connectors keep exactly what they own and keep consuming (releasing would stall the
   group on someone else's bug); once the node is gone, they rebalance normally, here taking in a bridge that
   joined meanwhile.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from tests.helpers.bridge import set_mode
from tests.helpers.wait import wait_until
from tests.helpers.zk import zk_client as open_zk

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow]

GARBAGE = [b"kafak", b"\xff\xfe\x00kafka\x80", b""]


def test_garbage_in_the_mode_node(drill: Drill) -> None:
    names = ["b0", "b1", "b2"]
    drill.start()
    for name in names:
        drill.bridge(name)
    drill.converge("zookeeper", names)
    cids = {drill.cid(n) for n in names}
    for n, garbage in enumerate(GARBAGE):
        if n == 0:  # under ZooKeeper authority (no mode node yet): the typo keeps it there
            drill.zk.create(drill.paths.mode, garbage, makepath=True)
        else:  # under Kafka authority: garbage makes it fall back
            set_mode(drill.zk, drill.group, "kafka")
            drill.settle("kafka", names)
            drill.zk.set(drill.paths.mode, garbage)
        expected = f"unknown mode value {garbage.decode('utf-8', errors='replace')!r}"
        wait_until(lambda e=expected: all(p.reason == e for c, p in drill.published().items() if c in cids), 30,
                   what=f"every bridge to publish {expected!r}")  # fmt: skip
        drill.settle("zookeeper", names)
        assert {m.conn.authority for m in drill.members.values()} == {"zookeeper"}
        drill.resumes()
        assert drill.zk.get(drill.paths.mode)[0] == garbage, "the mode node was rewritten"
    verdict = drill.finish()
    assert not verdict.duplicates, verdict.summary()


def test_malformed_ids_node_from_a_foreign_process(drill: Drill) -> None:
    names = ["b0", "b1"]
    drill.start()
    for name in names:
        drill.bridge(name)
    drill.converge("zookeeper", names)
    before = drill.owners()
    with open_zk(drill.cluster) as foreign:  # the ephemeral node goes with the foreign session
        foreign.create(drill.paths.member(drill.cid("foreign")), b"{not json", ephemeral=True)
        drill.bridge("b2")  # joins while the group cannot rebalance: it must wait, not guess
        time.sleep(3.0)
        assert drill.owners() == before, "owners changed while an ids node was unreadable"
        assert not drill.owned_by("b2")
        drill.resumes()
        assert all(m.conn.owned for n, m in drill.members.items() if n != "b2"), "a connector released"
        assert foreign.get(drill.paths.member(drill.cid("foreign")))[0] == b"{not json", "someone rewrote it"
    drill.converge("zookeeper", [*names, "b2"])
    wait_until(lambda: len(drill.owned_by("b2")) >= 2, 30, what="the late bridge to get its range share")
    resumed_s = drill.resumes()
    verdict = drill.finish()
    assert not verdict.duplicates, verdict.summary()
    print(f"malformed ids node: held on, then rebalanced; resumed {resumed_s:.1f}s after its removal")
