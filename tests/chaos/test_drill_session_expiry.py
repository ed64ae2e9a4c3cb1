"""Drill 2: one bridge's ZooKeeper session expires, under ZooKeeper and under Kafka authority.

`expire_session` attaches to the victim's session and closes it in one write: the server closes the victim's
connection, then ends the session and deletes its ephemerals (ids, migration ids, owners). The victim learns
of it when its ZooKeeper client reads the closed socket (SUSPENDED, then LOST on reconnect), and from that
notification on it hands out no record until it owns partitions again (at most the record each thread already
had in hand). Before the notification it cannot know: records of its partitions it starts between the deletion
of its owner nodes and the notification are owner violations the drill excuses and counts (as Scala's
connector, it cannot learn faster than its own socket). Under ZooKeeper authority the others see a member leave
and rejoin; under Kafka authority the Kafka assignment does not change, so the victim simply reclaims its share.
Either way the group ends where it started and consumes on; duplicates are excused only on the victim's
partitions above its last commit. Under Kafka authority nobody else processes the victim's partitions
meanwhile, and the victim resumes where it stopped, not at its last commit (the records it processed after that
commit are not processed again): the only records processed twice are those in the victim's threads' hands
when it dropped its partitions, at most one per thread.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

import pytest
from kazoo.client import KazooState

from migrator.observe import OwnerViolation, Processed, after_commit
from tests.chaos.conftest import STREAMS
from tests.helpers.bridge import set_mode
from tests.helpers.wait import wait_until
from tests.helpers.zk import expire_session

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow]


class BeforeNotice:
    """Excuses the owner violations no connector can avoid after its session is expired from outside: records
    of its own `partitions` that `member` started before its ZooKeeper client told it (`notified_ns`), and, per
    thread, the first one it started after (handed out before the gate closed, logged a moment later)."""

    def __init__(self, member: str, partitions: set[int], notified_ns: int, records: Iterable[Processed]) -> None:
        self.member = member
        self.partitions = partitions
        self.notified_ns = notified_ns
        first: dict[str, Processed] = {}
        for r in sorted(records, key=lambda r: r.start_ns):
            if r.member == member and r.start_ns >= notified_ns:
                first.setdefault(r.thread_id, r)
        self.in_hand = {r.key for r in first.values()}
        self.excused: list[OwnerViolation] = []

    def __call__(self, violation: OwnerViolation) -> bool:
        r = violation.record
        ok = r.member == self.member and r.partition in self.partitions
        ok = ok and (r.start_ns < self.notified_ns or r.key in self.in_hand)
        if ok:
            self.excused.append(violation)
        return ok


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
    # Added after the connector's own listener, so it runs after the handoff gate has closed.
    states: list[tuple[int, KazooState]] = []
    victim.conn._zk.add_listener(lambda s: states.append((time.time_ns(), s)) and None)
    before = drill.owners()
    held = drill.owned_by("b0")
    committed = drill.committed(held)

    expiring_ns = time.time_ns()
    expire_session(drill.cluster.zookeeper, victim.conn._zk)
    expired_at = time.monotonic()
    wait_until(lambda: any(s == KazooState.LOST for _t, s in states), 20,
               what="the victim to notice its expired session")  # fmt: skip
    notified_ns = next(t for t, s in states if s != KazooState.CONNECTED)
    drill.converge(authority, names)
    wait_until(lambda: drill.owners() == before, 30, what="every partition back with its owner before the expiry")
    recovered_s = time.monotonic() - expired_at
    resumed_s = drill.resumes()
    excuse = BeforeNotice(drill.cid("b0"), held, notified_ns, drill.records())
    verdict = drill.finish(allow_duplicate=after_commit(committed, drill.cid("b0")), excuse_violation=excuse)
    if authority == "kafka":
        again = [d for d in verdict.duplicates if not all(r.member == drill.cid("b0") for r in d.by)]
        assert not again, f"under Kafka authority only the victim processes its partitions: {again[:3]}"
        assert len(verdict.duplicates) <= STREAMS, (
            f"the victim processed {len(verdict.duplicates)} records twice (at most its {STREAMS} records in hand "
            f"at the expiry): it resumed at its last commit, not where it stopped; e.g. {verdict.duplicates[:3]}"
        )
    print(f"session expiry under {authority}: victim held {sorted(held)}; states {[str(s) for _t, s in states]},"
          f" notified {(notified_ns - expiring_ns) / 1e6:.1f} ms after the expiry began;"
          f" {len(excuse.excused)} owner violations before the notification excused;"
          f" owners restored {recovered_s:.1f}s after the expiry, resumed {resumed_s:.1f}s later")  # fmt: skip
