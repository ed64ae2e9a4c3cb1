"""Helpers for bridge tests: bridge properties, the mode toggle, and convergence checks read from ZooKeeper."""

from __future__ import annotations

import time

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoNodeError, SessionExpiredError

from migrator.demo.workload import bridge_props
from migrator.observe import ProcessingLog
from migrator.protocol.codecs import PublishedAuthority
from migrator.zk.group_reader import read_group
from migrator.zk.paths import GroupPaths
from tests.helpers.kafka import KafkaCluster
from tests.helpers.wait import wait_until
from tests.helpers.workload import Member


def start_bridge(
    cluster: KafkaCluster, group: str, cid: str, topic: str, streams: int, log: ProcessingLog, **props: str
) -> Member:
    props = {**bridge_props(cluster.bootstrap_servers), **props}
    return Member(cluster.zookeeper, group, cid, {topic: streams}, log, **props)


def set_mode(zk: KazooClient, group: str, value: str) -> int:
    """Write the mode node (creating parents) the way an operator would; returns the write time (ns)."""
    paths = GroupPaths(group)
    zk.ensure_path(paths.migration)
    t = time.time_ns()
    try:
        zk.set(paths.mode, value.encode())
    except NoNodeError:
        zk.create(paths.mode, value.encode())
    return t


def published(zk: KazooClient, group: str) -> dict[str, PublishedAuthority]:
    return dict(read_group(zk, group).authorities)


def owners(zk: KazooClient, group: str, topic: str) -> dict[int, str]:
    """partition -> owning thread id, one pipelined read."""
    return {tp.partition: thread for tp, thread in read_group(zk, group).owners_of(topic).items()}


def wait_converged(
    zk: KazooClient, group: str, topic: str, partitions: int, authority: str, bridges: set[str], timeout: float = 60.0
) -> None:
    """Every bridge publishes `authority` and every partition has an owner."""

    seen: list[str] = [""]

    def check() -> bool:
        try:
            pub, owned = published(zk, group), owners(zk, group, topic)
        except (ConnectionLoss, SessionExpiredError):  # the test's own client, after a ZooKeeper fault: ask again
            return False
        # what a timeout reports: each bridge's last publication and the owner count, not just "False"
        seen[0] = (
            "; ".join(
                f"{cid.rsplit('_', 1)[-1]}: {p.authority.value} gen {p.generation} {p.partitions} partitions"
                f"{' held' if p.held else ''} member {'yes' if p.kafka_member_id else 'no'} ({p.reason})"
                for cid, p in sorted(pub.items())
            )
            + f"; {len(owned)}/{partitions} partitions owned"
        )
        return (
            set(pub) >= bridges
            and all(pub[b].authority.value == authority for b in bridges)
            and len(owned) == partitions
        )

    try:
        wait_until(check, timeout=timeout, interval=0.05, what=f"{group} converged under {authority}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last seen: {seen[0]}") from None
