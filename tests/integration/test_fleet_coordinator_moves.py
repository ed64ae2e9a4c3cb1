"""Fleet apply reads groups through the one Kafka adapter, so a moved coordinator is handled as in a bridge.

The apply step re-reads every group before and after its switch. When a group's coordinator moves away from a
broker that stays up (the controller hands a restarted broker its `__consumer_offsets` partitions back), the
cached coordinator answers NOT_COORDINATOR; the adapter then looks it up afresh on its next request
(`migrator.kafka.admin`). Without that, every re-read of the group fails until the process ends, and apply
skips or rolls back a healthy group.
"""

from __future__ import annotations

import pytest

from migrator.fleet.apply import FleetIO
from tests.helpers.kafka import COORDINATOR_RETURNS, PollingMember, coordinator, make_topic
from tests.helpers.wait import wait_until
from tests.helpers.zk import zk_client

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(420)]


def test_fleet_apply_reads_a_group_after_its_coordinator_moved_back(cluster_factory, unique_group, unique_topic):
    three = cluster_factory(brokers=3, extra_broker_config=COORDINATOR_RETURNS)
    bootstrap, ensemble = three.bootstrap_servers, three.zookeeper
    make_topic(three, unique_topic, partitions=3, replication=3)
    member = PollingMember(bootstrap, unique_group, unique_topic, "plain-app", paused=True)
    try:
        wait_until(lambda: member.assigned, 60, what="the member assigned")
        home = wait_until(lambda: coordinator(bootstrap, unique_group), 60, what="the group's coordinator")
        three.stop_process(f"broker-{home}")
        wait_until(lambda: coordinator(bootstrap, unique_group) not in (None, home), 60, what="a new coordinator")
        with zk_client(three) as zk:
            io = FleetIO({ensemble: zk}, {ensemble: bootstrap}, {}, who="test")
            try:

                def described() -> bool:
                    facts = io.read(ensemble, unique_group)[1]
                    return facts is not None and facts.error is None and facts.group is not None

                wait_until(described, 60, interval=1.0, what="apply's read while the broker is down")
                three.start_process(f"broker-{home}")
                wait_until(lambda: coordinator(bootstrap, unique_group) == home, 90, interval=1.0,
                           what=f"the coordinator back on broker-{home}")  # fmt: skip
                wait_until(described, 30, interval=1.0, what="apply's read after the coordinator moved back")
            finally:
                io.close()
    finally:
        member.close()
