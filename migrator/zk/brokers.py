"""What a ZooKeeper-mode Kafka cluster registers about itself: its brokers and its topics' partitions.

Operator commands use it when `--bootstrap-servers` is left out: a switch that cannot see the Kafka group
must not be made blind, so the brokers are found where the Scala connector found them (`/brokers/ids`),
else where the group's bridges say their embedded members joined (their published authority).
"""

from __future__ import annotations

import logging
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

from migrator.errors import CorruptNodeError
from migrator.protocol.codecs import decode_broker, decode_broker_topic
from migrator.zk.group_reader import read_published
from migrator.zk.paths import BROKER_IDS, broker_topic

log = logging.getLogger(__name__)


def registered_brokers(zk: KazooClient) -> str:
    """`host:port,...` of the live brokers under /brokers/ids ("" when none is registered)."""
    try:
        ids = zk.get_children(BROKER_IDS)
    except NoNodeError:
        return ""
    hosts = []
    for broker in sorted(ids):
        try:
            host, port = decode_broker(zk.get(f"{BROKER_IDS}/{broker}")[0])
        except (NoNodeError, CorruptNodeError):
            log.warning("ignoring unreadable broker registration %s", broker)
            continue
        hosts.append(f"{host}:{port}")
    return ",".join(hosts)


def wait_for_brokers(zk: KazooClient, timeout_s: float) -> str:
    """`registered_brokers`, waiting up to `timeout_s` for a first broker to register ("" if none did).

    The Scala connector never needs a broker to start and keeps looking for one; ours needs one for its fetcher, so
    it waits at least a connect timeout: a broker whose registration is briefly gone (its own session expired, a
    restart) is back by then. Woken by a watch on `/brokers/ids` (on its creation when it does not exist yet), and
    looks again at least every second in case a reconnect dropped the watch."""
    deadline = time.monotonic() + timeout_s
    changed = threading.Event()

    def wake(_event: object) -> None:
        changed.set()

    while True:
        changed.clear()
        try:
            if zk.exists(BROKER_IDS, watch=wake) is not None and zk.get_children(BROKER_IDS, watch=wake):
                found = registered_brokers(zk)
                if found:
                    return found
        except KazooException:  # ZooKeeper reconnecting: look again
            pass
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return ""
        changed.wait(min(1.0, remaining))


def published_bootstrap(zk: KazooClient, group: str) -> str:
    """The Kafka cluster the group's bridges published (first by consumer id), "" when none did."""
    published = read_published(zk, group)
    return next((p.node.bootstrap for _, p in sorted(published.items()) if p.node.bootstrap), "")


def topic_partitions(zk: KazooClient, topic: str) -> tuple[int, ...] | None:
    """Partition ids of `topic` from /brokers/topics; None when it is not registered there."""
    try:
        data, _ = zk.get(broker_topic(topic))
        return tuple(sorted(decode_broker_topic(data)))
    except (NoNodeError, CorruptNodeError):
        return None
