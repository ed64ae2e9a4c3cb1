"""What a ZooKeeper-mode Kafka cluster registers about itself: its brokers and its topics' partitions.

Operator commands use it when `--bootstrap-servers` is left out: a switch that cannot see the Kafka group
must not be made blind, so the brokers are found where the Scala connector found them (`/brokers/ids`),
else where the group's bridges say their embedded members joined (their published authority).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

from migrator.errors import ConfigError, CorruptNodeError
from migrator.protocol.codecs import BrokerEndpoint, decode_broker_endpoints, decode_broker_topic
from migrator.protocol.pykafka_layout import decode_partition_leader
from migrator.zk.paths import BROKER_IDS, broker_topic, partition_state
from migrator.zk.pipeline import MISSING, ReadPipeline, pipeline_of

log = logging.getLogger(__name__)


def registered_brokers(zk: KazooClient, security_protocol: str | None = None) -> str:
    """`host:port,...` of the live brokers under /brokers/ids, each at its endpoint whose listener speaks
    `security_protocol` (default PLAINTEXT); "" when no broker is registered. ConfigError when brokers are
    registered but none offers that protocol: connecting anyway would only time out."""
    try:
        ids = zk.get_children(BROKER_IDS)
    except NoNodeError:
        return ""
    brokers = []
    for broker in sorted(ids):
        try:
            brokers.append(decode_broker_endpoints(zk.get(f"{BROKER_IDS}/{broker}")[0]))
        except (NoNodeError, CorruptNodeError):
            log.warning("ignoring unreadable broker registration %s", broker)
    return endpoints_for(brokers, security_protocol)


def endpoints_for(brokers: Sequence[Sequence[BrokerEndpoint]], security_protocol: str | None) -> str:
    """The address of each broker's first endpoint speaking `security_protocol` (PLAINTEXT when None)."""
    wanted = (security_protocol or "PLAINTEXT").strip().upper()
    chosen = [next((e.address for e in endpoints if e.protocol == wanted), None) for endpoints in brokers]
    found = [address for address in chosen if address is not None]
    if brokers and not found:
        offered = sorted({f"{e.protocol}://{e.address}" for endpoints in brokers for e in endpoints})
        raise ConfigError(
            f"security.protocol is {wanted}, but the brokers under {BROKER_IDS} register no {wanted} listener "
            f"(they offer {', '.join(offered)}): set security.protocol to one of those, or give the brokers "
            "explicitly (--bootstrap-servers / bootstrap.servers)"
        )
    return ",".join(found)


def wait_for_brokers(zk: KazooClient, timeout_s: float, security_protocol: str | None = None) -> str:
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
                found = registered_brokers(zk, security_protocol)
                if found:
                    return found
        except KazooException:  # ZooKeeper reconnecting: look again
            pass
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return ""
        changed.wait(min(1.0, remaining))


TopicPartitions = tuple[int, ...] | CorruptNodeError | None
"""A topic's partition ids from `/brokers/topics/<topic>`; None when it is not registered there."""


def queue_topic_partitions(pipe: ReadPipeline, topic: str, on_result: Callable[[TopicPartitions], None]) -> None:
    """Queue the read of `topic`'s partition ids on `pipe` (the one place they are read from ZooKeeper)."""

    def on_topic(result: Any) -> None:
        if result is MISSING:
            on_result(None)
            return
        try:
            on_result(tuple(sorted(decode_broker_topic(result[0]))))
        except CorruptNodeError as exc:
            on_result(exc)

    pipe.get(broker_topic(topic), on_topic)


def queue_partition_leaders(pipe: ReadPipeline, topic: str, partitions: Iterable[int], into: dict[int, int]) -> None:
    """Queue the reads of the leaders of `partitions` (`partitions/<p>/state`) into `into` (partition ->
    leader broker id; a partition without a readable state is left out)."""
    for partition in partitions:

        def on_state(result: Any, partition: int = partition) -> None:
            if result is MISSING:
                return
            try:
                into[partition] = decode_partition_leader(result[0])
            except CorruptNodeError as exc:
                log.warning("ignoring the state of %s-%d: %s", topic, partition, exc)

        pipe.get(partition_state(topic, partition), on_state)


def topics_partitions(zk: KazooClient | ReadPipeline, topics: Iterable[str]) -> dict[str, TopicPartitions]:
    """The partition ids of each of `topics`, in one pipelined round trip."""
    pipe = pipeline_of(zk)
    found: dict[str, TopicPartitions] = {}
    for topic in sorted(set(topics)):
        queue_topic_partitions(pipe, topic, partial(found.__setitem__, topic))
    pipe.drain()
    return found


def topic_partitions(zk: KazooClient, topic: str) -> tuple[int, ...] | None:
    """Partition ids of `topic` from /brokers/topics; None when it is not registered there (or unreadable)."""
    ids = topics_partitions(zk, [topic])[topic]
    return ids if isinstance(ids, tuple) else None


def partition_leaders(zk: KazooClient, topic: str) -> dict[int, int]:
    """partition -> leader broker id of `topic`, pipelined ({} for no such topic)."""
    pipe = pipeline_of(zk)
    ids = topics_partitions(pipe, [topic])[topic]
    leaders: dict[int, int] = {}
    queue_partition_leaders(pipe, topic, ids if isinstance(ids, tuple) else (), leaders)
    pipe.drain()
    return leaders
