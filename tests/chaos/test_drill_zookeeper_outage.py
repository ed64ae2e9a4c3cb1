"""Drill 11: ZooKeeper down for 20 s, five times the bridges' session timeout, then back, under each authority.

A ZooKeeper restart in production (an upgrade, a full ensemble restart) easily outlasts a session timeout.
One cluster serves two groups, one obeying Kafka and one ZooKeeper, three bridges each in their own
processes. While ZooKeeper is down no bridge can prove it owns anything, so none may hand out a record (none
may start later than `GRACE_NS` after the stop, until the restart), and no member process may die. When
ZooKeeper is back the sessions either resume or expire (the server may keep them across its restart); every
group must then own every partition again under its authority and process a record produced after the
restart within `RESUME_BOUND_S`.

Duplicates are allowed, and only these: the session may have expired, and then a bridge re-registers and
resumes from the last commit, so the records it processed after that commit and before the stop may be
processed again, by anyone in the group (ownership may change in the re-registration), at or above the
offset committed when ZooKeeper stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from migrator.observe import after_commit
from tests.chaos.conftest import without_zookeeper

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]

DOWN_S = 20.0  # bridges' zookeeper.session.timeout.ms is 4 s (tests.helpers.member_proc)
GRACE_NS = 500_000_000  # time for a bridge to see its connection drop (the TCP close is immediate)
RESUME_BOUND_S = 60.0  # ZooKeeper ready -> every partition of both groups processed a record produced after it
RATE = 150.0  # per group


def test_zookeeper_down_20s(both_modes: Callable[[list[str], float], dict[str, Drill]]) -> None:
    names = ["b0", "b1", "b2"]
    drills = both_modes(names, RATE)
    outage, committed = without_zookeeper(drills, names, "zookeeper", DOWN_S, GRACE_NS, RESUME_BOUND_S)
    resumed_s = outage.since_ready()
    verdicts = {a: d.finish(allow_duplicate=after_commit(committed[a], d.cid(""))).counts() for a, d in drills.items()}
    print(f"ZooKeeper down {outage.down_s:.1f}s: restart {outage.restart_s:.1f}s, resumed {resumed_s:.1f}s after it"
          f" was ready; {verdicts}")  # fmt: skip
