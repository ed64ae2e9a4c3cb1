"""A real bridge keeps working on a group protected by `acl protect`, and follows a switch that only the
admin identity may make."""

from __future__ import annotations

import pytest
from kazoo.exceptions import NoAuthError

from migrator.cli.main import main
from migrator.observe import ProcessingLog
from migrator.zk.paths import GroupPaths
from tests.helpers.bridge import set_mode, start_bridge, wait_converged
from tests.helpers.kafka import make_topic
from tests.helpers.wait import wait_until
from tests.helpers.workload import SequencedProducer

pytestmark = pytest.mark.integration
ADMIN = "digest:ops:s3cret"


def test_bridge_works_under_the_acls_and_follows_the_admins_switch(
    cluster, unique_group, unique_topic, zk_client
) -> None:
    make_topic(cluster, unique_topic, 4)
    assert main(["acl", "protect", "-z", cluster.zookeeper, "-g", unique_group, "--admin", ADMIN]) == 0
    log = ProcessingLog()
    producer = SequencedProducer(cluster, unique_topic, rate=100).start()
    bridges = [start_bridge(cluster, unique_group, f"b{i}", unique_topic, 1, log) for i in range(2)]
    names = {f"{unique_group}_b{i}" for i in range(2)}
    try:
        wait_converged(zk_client, unique_group, unique_topic, 4, "zookeeper", names)
        with pytest.raises(NoAuthError):
            set_mode(zk_client, unique_group, "kafka")  # a consumer's identity may not switch
        switch = ["set-mode", "kafka", "-z", cluster.zookeeper, "-g", unique_group, "-b", cluster.bootstrap_servers]
        assert main(switch) == 2  # refused without the admin identity
        assert main([*switch, "--zk-auth", ADMIN, "--reason", "acl test"]) == 0
        wait_converged(zk_client, unique_group, unique_topic, 4, "kafka", names)
        produced = producer.stop()
        wait_until(lambda: produced <= {r.key for r in log.records()}, timeout=60, what="every record processed")
    finally:
        for b in bridges:
            b.shutdown()
    assert zk_client.get(GroupPaths(unique_group).mode)[0] == b"kafka"
    assert zk_client.get_children(GroupPaths(unique_group).ids) == []  # the bridges cleaned up after themselves
