"""A restarted broker that answers before it knows the cluster: its Metadata answers list no broker.

A broker that starts serves requests before its controller has sent it the cluster's metadata; until then a
Metadata answer lists no broker and calls every topic unknown. librdkafka takes such an answer at its word and
drops every broker it knew, bootstrap servers included, and with no broker left it never asks again: its
record fetcher delivers nothing more, with no error. Under load the window lasts seconds and a client that
asks for metadata in it is stranded (seen in drill 4 as a bridge whose partitions stopped). The fetcher
replaces a client that has been neither connected nor trying for `stranding.STRANDED_S`.

Here the window is held open on purpose: while the only broker is down, the test's own ZooKeeper session
takes the `/controller` node (for a broker id that does not exist), so the restarted broker cannot become the
controller and no metadata reaches it; the node is released `HOLD_S` after the broker accepts connections
(see `TRAPPED`: the member has asked by then). The member (a
legacy connector, in its own process on the public API) must then consume records produced after the restart
within `RESUME_BOUND_S` of the broker being ready, with nothing lost and nothing processed twice.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from kazoo.exceptions import NoNodeError

from migrator.devcluster.ports import accepts
from tests.helpers.bridge import set_mode
from tests.helpers.cluster import restart_process
from tests.helpers.wait import wait_until

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]

HOLD_S = 5.0  # the broker answers Metadata without brokers this long after it accepts connections
# The member's fetcher keeps the broker it learned through the outage (no re-bootstrap, which would replace it
# by the bootstrap servers) and retries it every second, so it asks the restarted broker for metadata within
# `HOLD_S` and drops it on every run. Under the default (re-bootstrap) the same answer strands the client only
# while the learned broker's handle is still being torn down, a matter of load and timing.
TRAPPED = {"fetcher.metadata.recovery.strategy": "none", "fetcher.reconnect.backoff.max.ms": "1000"}
MEMBER_TRAPPED = {f"coordination.migration.{key.removeprefix('fetcher.')}": value for key, value in TRAPPED.items()}
RESUME_BOUND_S = 40.0  # broker ready -> every partition processed a record produced after it
CONTROLLER = "/controller"


def hold_controller_until_released(d: Drill, port: int) -> threading.Thread:
    """Take `/controller` now; a thread releases it `HOLD_S` after the broker on `port` accepts connections."""
    wait_until(lambda: d.zk.exists(CONTROLLER) is None, 30, what="the stopped broker's controller node to go")
    d.zk.create(CONTROLLER, json.dumps({"version": 1, "brokerid": 99, "timestamp": "0"}).encode(), ephemeral=True)

    def release() -> None:
        wait_until(lambda: accepts(port), 120, interval=0.2, what="the restarted broker to accept connections")
        time.sleep(HOLD_S)
        with contextlib.suppress(NoNodeError):
            d.zk.delete(CONTROLLER)

    thread = threading.Thread(target=release, name="release-controller", daemon=True)
    thread.start()
    return thread


def test_a_member_fetches_again_after_metadata_without_brokers(drill_on: Callable[..., Drill]) -> None:
    d = drill_on().start(partitions=4, rate=100.0)
    d.spawn("b0", TRAPPED)
    wait_until(lambda: len(d.owners()) == d.partitions, 30, what="the member to own every partition")
    d.resumes(timeout=30)

    port = int(d.cluster.bootstrap_servers.rsplit(":", 1)[1])
    d.cluster.stop_process("broker-1")
    releaser = hold_controller_until_released(d, port)
    restart_process(d.cluster, "broker-1")  # ready only once the broker is the controller again
    releaser.join(5)
    ready_at = time.monotonic()
    d.assert_alive()

    d.resumes(timeout=RESUME_BOUND_S)
    print(f"resumed {time.monotonic() - ready_at:.1f}s after the broker was ready")
    d.finish()


def test_a_bridge_rejoins_kafka_after_metadata_without_brokers(drill_on: Callable[..., Drill]) -> None:
    """The embedded member meets the same answer: without a new client it never joins the group again, and the
    group stays under ZooKeeper authority for good (still consuming, but off Kafka)."""
    d = drill_on().start(partitions=4, rate=100.0)
    d.spawn_bridge("b0", **TRAPPED, **MEMBER_TRAPPED)
    set_mode(d.zk, d.group, "kafka")
    d.settle("kafka", ["b0"])
    d.resumes(timeout=30)

    port = int(d.cluster.bootstrap_servers.rsplit(":", 1)[1])
    d.cluster.stop_process("broker-1")
    releaser = hold_controller_until_released(d, port)
    restart_process(d.cluster, "broker-1")
    releaser.join(5)
    ready_at = time.monotonic()
    d.assert_alive()

    d.resumes(timeout=RESUME_BOUND_S)
    d.settle("kafka", ["b0"])
    print(f"back under Kafka authority {time.monotonic() - ready_at:.1f}s after the broker was ready")
    d.finish()
