"""Drill 5: the mode node flaps between kafka and zookeeper 20 times in 10 s, then settles.

An operator script gone wrong: writes arrive faster than a switch completes, so bridges see changes mid
rebalance, coalesce some and miss none of the last. Every switch is a clean transition, so nothing may be
processed twice; and whatever the final value, every bridge must end up obeying it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from tests.helpers.bridge import set_mode

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow]

FLIPS = 20
EVERY_S = 0.5


@pytest.mark.parametrize("final", ["kafka", "zookeeper"])
def test_mode_flapping_then_settling(drill: Drill, final: str) -> None:
    names = ["b0", "b1", "b2"]
    drill.start()
    for name in names:
        drill.bridge(name)
    drill.converge("zookeeper", names)
    first = "zookeeper" if final == "kafka" else "kafka"  # alternate so that the 20th write is `final`
    began = time.monotonic()
    for n in range(FLIPS):
        set_mode(drill.zk, drill.group, first if n % 2 == 0 else final)
        time.sleep(max(0.0, began + (n + 1) * EVERY_S - time.monotonic()))
    assert drill.zk.get(drill.paths.mode)[0].decode() == final
    settled_at = time.monotonic()
    drill.settle(final, names)
    converged_s = time.monotonic() - settled_at
    assert {m.conn.authority for m in drill.members.values()} == {final}
    resumed_s = drill.resumes()
    verdict = drill.finish()
    assert not verdict.duplicates, verdict.summary()
    print(f"{FLIPS} flips settling on {final}: settled {converged_s:.1f}s after the last write (2 s quiet),"
          f" resumed {resumed_s:.1f}s later")  # fmt: skip
