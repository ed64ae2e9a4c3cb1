"""Reading the group's state for the demo's "step done" checks: topics, owners, published authorities
and the Kafka group. Read-only except `create_topic`.

A step is done when the group has converged (every partition owned by exactly the members expected) and
every partition has processed a record again: only then is the next step's pause measured cleanly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection

from migrator.errors import MigratorError
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.protocol.codecs import Authority
from migrator.zk.brokers import topic_partitions
from migrator.zk.group_reader import read_group
from migrator.zk.session import ZkSession


class StepTimeout(MigratorError):
    """The group did not reach the state a step waits for."""


def wait_for(check: Callable[[], bool], timeout_s: float, what: str, interval_s: float = 0.05) -> float:
    """Seconds until `check()` held; StepTimeout naming `what` after `timeout_s`."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout_s:
            raise StepTimeout(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(interval_s)
    return time.monotonic() - started


def create_topic(admin: KafkaAdmin, zk: ZkSession, topic: str, partitions: int, timeout_s: float = 30.0) -> None:
    """Create `topic` and return once the brokers and `/brokers/topics/<topic>` both list every partition
    (connectors read partitions from ZooKeeper, plain consumers from the brokers)."""
    admin.create_topic(topic, partitions)

    def ready() -> bool:
        try:
            broker_side = admin.partitions(topic)
        except KafkaUnavailable:
            return False
        in_zookeeper = topic_partitions(zk, topic)
        return broker_side is not None and len(broker_side) == partitions == len(in_zookeeper or ())

    wait_for(ready, timeout_s, f"topic {topic} with {partitions} partitions", interval_s=0.1)


def owning_members(zk: ZkSession, group: str, topic: str) -> dict[int, str]:
    """partition -> the consumer id of its owner, from the owner nodes of the group's dialect (the group read)."""
    owners = read_group(zk, group).owners
    return {tp.partition: thread.rpartition("-")[0] for tp, thread in owners.items() if tp.topic == topic}


def authorities(zk: ZkSession, group: str, bridges: Collection[str]) -> dict[str, Authority]:
    """consumerId -> the authority it publishes (absent when unpublished or unreadable)."""
    published = read_group(zk, group).authorities
    return {cid: published[cid].authority for cid in bridges if cid in published}


def kafka_assignment(admin: KafkaAdmin, group: str) -> dict[str, set[int]] | None:
    """client.id -> partitions assigned by the Kafka group (None while it is rebalancing or unreachable)."""
    try:
        desc = admin.describe_group(group)
    except KafkaUnavailable:
        return None
    if not desc.stable:
        return None
    return {m.client_id: {tp.partition for tp in m.partitions} for m in desc.members}
