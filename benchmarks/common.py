"""What every benchmark shares: a cluster (given, from the test env variables, or a dev cluster of our own,
always downed), ZooKeeper's request counter, a group of members in child processes under a steady
producer, and saving results as JSON under benchmarks/results/.

Every figure is reported next to a baseline measured in the same run on the same cluster, as a ratio, so
results from different machines compare by their ratios, not their absolute values.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.member_process import MemberSpec, RemoteMember
from migrator.demo.group import create_topic
from migrator.demo.steps import GroupDriver, Sizing
from migrator.demo.workload import PLAIN_HEARTBEAT_MS, QUIET_LOGGER, LiveLog, SequencedProducer
from migrator.devcluster.ports import four_letter_word
from migrator.kafka.admin import KafkaAdmin
from migrator.zk.client import connect

ROOT = Path(__file__).resolve().parents[1]

RESULTS = ROOT / "benchmarks" / "results"


@dataclass(frozen=True)
class Cluster:
    zookeeper: str
    bootstrap_servers: str
    mntr: Callable[[], dict[str, str]]


def _mntr_of(zookeeper: str) -> Callable[[], dict[str, str]]:
    port = int(zookeeper.split(",")[0].split("/")[0].rpartition(":")[2])

    def mntr() -> dict[str, str]:
        text = four_letter_word(port, "mntr")
        return dict(line.split("\t", 1) for line in text.splitlines() if "\t" in line)

    return mntr


def add_cluster_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--zookeeper", "-z", help="use this (loopback) ZooKeeper instead of a dev cluster")
    parser.add_argument("--bootstrap-servers", "-b", help="its brokers (with --zookeeper)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")


@contextlib.contextmanager
def cluster(zookeeper: str | None = None, bootstrap: str | None = None, name: str | None = None) -> Iterator[Cluster]:
    """The given cluster, else MIGRATOR_TEST_ZOOKEEPER/_BOOTSTRAP, else a dev cluster (named `name`, or a
    name unique to this process) downed on exit."""
    zookeeper = zookeeper or os.environ.get("MIGRATOR_TEST_ZOOKEEPER")
    bootstrap = bootstrap or os.environ.get("MIGRATOR_TEST_BOOTSTRAP")
    if zookeeper and bootstrap:
        yield Cluster(zookeeper, bootstrap, _mntr_of(zookeeper))
        return
    from migrator.devcluster import DevCluster

    dev = DevCluster.start(brokers=1, name=name)
    try:
        yield Cluster(dev.zookeeper, dev.bootstrap_servers, dev.mntr)
    finally:
        dev.down()


@dataclass(frozen=True)
class Size:
    members: int
    streams: int
    partitions: int
    per_partition_rate: float = 100.0  # a record every 10 ms per partition: the resolution of every pause


def group_driver(
    c: Cluster,
    size: Size,
    tag: str,
    log_dir: str | None = None,
    admin_timeout_s: float = 10.0,
    assignor: str | None = None,
) -> tuple[GroupDriver, SequencedProducer, KafkaAdmin]:
    """A fresh topic (group of the same name) whose members each run in their own process
    (`member_process`), and a round-robin producer for it, not yet started. `admin_timeout_s` bounds each
    admin request, the topic's creation included (a thousand partitions take longer on a loaded host).
    `assignor`: the Kafka members' `partition.assignment.strategy` (the bridges' embedded members' too)."""
    import logging

    topic = unique(tag)
    zk = connect(c.zookeeper)
    # librdkafka also gives up on any request after socket.timeout.ms (60 s by default)
    props = {"logger": logging.getLogger(QUIET_LOGGER), "socket.timeout.ms": int(max(60.0, admin_timeout_s) * 1000)}
    admin = KafkaAdmin(c.bootstrap_servers, props, admin_timeout_s)
    create_topic(admin, zk, topic, size.partitions, timeout_s=max(30.0, admin_timeout_s))
    sizing = Sizing(size.members, size.streams, size.partitions, size.per_partition_rate * size.partitions,
                    settle_s=0.3, step_timeout_s=90.0 + 5 * size.members)  # fmt: skip
    log = LiveLog()

    def spawn(kind: str, name: str) -> RemoteMember:
        spec = MemberSpec(kind, name, c.zookeeper, c.bootstrap_servers, topic, topic, size.streams, log_dir,
                          assignor)  # fmt: skip
        return RemoteMember(spec, log)

    driver = GroupDriver(c.zookeeper, c.bootstrap_servers, topic, topic, sizing, zk, admin, log,
                         echo=lambda line: print(line, flush=True), spawn=spawn)  # fmt: skip
    producer = SequencedProducer(
        c.bootstrap_servers, topic, size.partitions, sizing.rate, batch=max(1, size.partitions // 16)
    )
    return driver, producer, admin


def join(d: GroupDriver, kind: str, name: str) -> int:
    """Start a member in its own process; return when it asked to join: the trigger of a join's pause."""
    member = d.start(kind, name)
    assert isinstance(member, RemoteMember)
    return member.wait_subscribed()


def at_random_heartbeat_phase() -> None:
    """Sleep a random part of one heartbeat interval. A Kafka rebalance starts at the other members' next
    heartbeat, whose phase the previous rebalance set: a trigger a fixed time after it would hand each group a
    phase of its own, and their pauses a difference that is the benchmark's, not the members'."""
    time.sleep(random.uniform(0.0, PLAIN_HEARTBEAT_MS / 1000))


def close_group(d: GroupDriver) -> None:
    """Stop every member and the driver's ZooKeeper client; raise if a member reported an error."""
    d.stop_all()
    d.zk.stop()
    d.zk.close()
    if d.errors:
        raise RuntimeError(f"member errors: {d.errors}")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def packets(c: Cluster) -> int:
    return int(c.mntr()["zk_packets_received"])


def ratio(value: float | None, baseline: float | None) -> float | None:
    if value is None or not baseline:
        return None
    return round(value / baseline, 3)


def save(name: str, doc: dict[str, Any]) -> Path:
    """Write benchmarks/results/<name>.json with the machine it ran on, and return the path."""
    doc = {
        "benchmark": name,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        **doc,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return path
