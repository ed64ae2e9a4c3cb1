"""Drill 15: one bridge cut from ZooKeeper by a silent partition, past its session timeout, then healed.

A stopped ZooKeeper closes its sockets and a client knows at once; a partition (a dead switch, a firewall
dropping packets) closes nothing, and the client learns only from its own timeouts while the server expires
its session. The victim, a bridge in its own process, reaches ZooKeeper through a `SilentProxy` that stops
forwarding for `SILENT_S` (three times its 4 s session timeout); the two other bridges connect directly.

Under ZooKeeper authority: the victim must stop handing out records once its session can have expired
(`session timeout` after the silence began, when the others may already own its partitions), the others
must take over every partition while it is still cut off, and when the partition heals the victim must
reconnect, re-register and get its share again. Duplicates are allowed only as for a session expiry: on the
victim's partitions, at or above the offset committed when it was cut off.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from migrator.devcluster.proxy import SilentProxy
from migrator.observe import after_commit
from tests.helpers.bridge import bridge_props
from tests.helpers.wait import wait_until

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]

SESSION_S = 4.0  # the member processes' zookeeper.session.timeout.ms (tests.helpers.member_proc)
SILENT_S = 3 * SESSION_S
TAKEOVER_BOUND_S = 30.0  # silence -> the two others own every partition
REJOIN_BOUND_S = 60.0  # healed -> the victim owns partitions again and every partition consumes new records


@pytest.fixture
def zookeeper_proxy(drill: Drill) -> Iterator[SilentProxy]:
    """A proxy in front of the drill's (single) ZooKeeper server."""
    port = int(drill.cluster.zookeeper.split(",")[0].rpartition(":")[2])
    with SilentProxy(port) as proxy:
        yield proxy


def test_bridge_cut_from_zookeeper_silently(drill: Drill, zookeeper_proxy: SilentProxy) -> None:
    names = ["b0", "b1", "b2"]
    drill.start()
    drill.spawn("b0", bridge_props(drill.cluster.bootstrap_servers), zookeeper=zookeeper_proxy.address)
    for name in names[1:]:
        drill.spawn_bridge(name)
    drill.settle("zookeeper", names)
    time.sleep(1.5)  # every bridge processes and commits at least once
    held = drill.owned_by("b0")
    assert held, "the victim owns nothing: the drill would prove nothing"
    committed = drill.committed(held)

    zookeeper_proxy.silence()
    silenced_ns, silenced_at = time.time_ns(), time.monotonic()
    wait_until(lambda: not drill.owned_by("b0") and len(drill.owners()) == drill.partitions, TAKEOVER_BOUND_S,
               what="the two others to own every partition while the victim is cut off")  # fmt: skip
    takeover_s = time.monotonic() - silenced_at
    time.sleep(max(0.0, SILENT_S - (time.monotonic() - silenced_at)))
    drill.assert_alive()
    zookeeper_proxy.resume()
    healed_ns, healed_at = time.time_ns(), time.monotonic()

    cut_off = int(SESSION_S * 1e9)
    late = [r for r in drill.records() if r.member.startswith(drill.cid("b0"))
            and silenced_ns + cut_off <= r.start_ns <= healed_ns]  # fmt: skip
    assert not late, f"the victim handed out {len(late)} records after its session could expire: {late[:3]}"
    wait_until(lambda: bool(drill.owned_by("b0")), REJOIN_BOUND_S, what="the victim to rejoin and own partitions")
    drill.converge("zookeeper", names, timeout=max(1.0, REJOIN_BOUND_S - (time.monotonic() - healed_at)))
    drill.resumes(timeout=max(1.0, REJOIN_BOUND_S - (time.monotonic() - healed_at)))
    rejoined_s = time.monotonic() - healed_at
    verdict = drill.finish(allow_duplicate=after_commit(committed, drill.cid("b0")))
    print(f"silent ZooKeeper partition of b0 (held {sorted(held)}) for {SILENT_S:.0f}s: others took over"
          f" {takeover_s:.1f}s after it began; rejoined and resumed {rejoined_s:.1f}s after it healed;"
          f" {verdict.counts()}")  # fmt: skip
