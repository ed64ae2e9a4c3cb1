"""What a bridge joining a group in mode kafka costs a member already there, counted by kind with the
product's own ZooKeeper client (`InterruptSafeClient.requests_sent`): no existence checks, and no read of an
owner node, a registration already known, the mode or the topics; its reads are the offsets of the partitions
it claims and the joiner's registration. The joiner reads the group while its embedded member joins, and after
its assignment only the members registered since; its own registration triggers no rebalance; and its first
publication creates its authority node at once."""

from __future__ import annotations

from collections import Counter

import pytest

from migrator.observe import ProcessingLog
from migrator.protocol.codecs import Authority, PublishedAuthority, Registration
from migrator.zk.client import connect
from migrator.zk.paths import GroupPaths
from migrator.zk.registry import Registry
from tests.helpers.bridge import owners, set_mode, start_bridge, wait_converged
from tests.helpers.kafka import make_topic
from tests.helpers.workload import Member

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_a_survivor_reads_only_the_joiner_and_its_claimed_offsets(
    cluster, unique_group, unique_topic, zk_client
) -> None:
    partitions = 8
    make_topic(cluster, unique_topic, partitions)
    set_mode(zk_client, unique_group, "kafka")
    log = ProcessingLog()
    bridges: list[Member] = []
    try:
        for i in range(2):
            bridges.append(start_bridge(cluster, unique_group, f"b{i}", unique_topic, 1, log))
        names = {f"{unique_group}_b{i}" for i in range(2)}
        wait_converged(zk_client, unique_group, unique_topic, partitions, "kafka", names)
        survivor = bridges[0].conn._zk
        before = Counter(survivor.requests_sent)
        bridges.append(start_bridge(cluster, unique_group, "b2", unique_topic, 1, log))
        wait_converged(zk_client, unique_group, unique_topic, partitions, "kafka", names | {f"{unique_group}_b2"})
        sent = Counter(survivor.requests_sent) - before
        joiner = Counter(bridges[2].conn._zk.requests_sent)
        claimed = sum(1 for thread in owners(zk_client, unique_group, unique_topic).values() if "_b0-" in thread)
    finally:
        for bridge in bridges:
            bridge.shutdown()
    assert sent["GetData"] <= claimed + 1, (sent, claimed)  # its offsets, and the joiner's registration
    assert sent["Exists"] == 0, sent
    # its full read while its embedded member joined, and its first rebalance's read of the members registered
    # since (itself): its own registration fires no other
    assert joiner["GetChildren2"] == 2, joiner


@pytest.mark.integration
def test_the_first_publication_after_registering_creates_the_authority_node_in_one_request(
    cluster, unique_group, unique_topic
) -> None:
    zk = connect(cluster.zookeeper)
    try:
        paths = GroupPaths(unique_group)
        zk.ensure_path(paths.authority)  # as any bridge of the group before has left it
        registry = Registry(zk, paths, f"{unique_group}_b0", bridge=True)
        registry.register(Registration({unique_topic: 1}))
        before = Counter(zk.requests_sent)
        registry.publish(PublishedAuthority(Authority.KAFKA, 1, 0))
        assert Counter(zk.requests_sent) - before == {"Create": 1}
        registry.publish(PublishedAuthority(Authority.KAFKA, 2, 0))
        assert Counter(zk.requests_sent) - before == {"Create": 1, "SetData": 1}
        registry.deregister()
    finally:
        zk.stop()
        zk.close()


@pytest.mark.integration
def test_a_bridge_registers_in_one_transaction_and_replaces_a_node_left_by_an_earlier_session(
    cluster, unique_group, unique_topic, zk_client
) -> None:
    zk = connect(cluster.zookeeper)
    paths = GroupPaths(unique_group)
    cid = f"{unique_group}_b0"
    registration = Registration({unique_topic: 1})
    zk.ensure_path(paths.ids)
    zk.ensure_path(paths.migration_ids)
    try:
        before = Counter(zk.requests_sent)
        Registry(zk, paths, cid, bridge=True).register(registration)
        assert Counter(zk.requests_sent) - before == {"Transaction": 1}
        for path in (paths.member(cid), paths.migration_member(cid)):
            assert zk.exists(path).ephemeralOwner == zk.client_id[0]
        zk.delete(paths.member(cid))
        zk_client.create(paths.member(cid), b"left over", ephemeral=True)  # another session's node
        zk.delete(paths.migration_member(cid))
        Registry(zk, paths, cid, bridge=True).register(registration)
        data, stat = zk.get(paths.member(cid))
        assert stat.ephemeralOwner == zk.client_id[0] and Registration.decode(data) == registration
        assert zk.exists(paths.migration_member(cid)).ephemeralOwner == zk.client_id[0]
    finally:
        zk.stop()
        zk.close()
