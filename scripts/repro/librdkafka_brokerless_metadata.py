#!/usr/bin/env python3
"""Minimal reproduction: a consumer drops every broker after a Metadata answer that lists none, and never asks again.

A Kafka broker that starts serves requests before its controller has sent it the cluster's metadata; until then its
Metadata answers list no broker. librdkafka drops every broker missing from such an answer, bootstrap servers
included, and with no broker left it sends no request again: a consumer with assigned partitions receives nothing
more and reports no error. The migrator fetcher replaces such a client (`migrator.kafka.stranding`).

Steps: assign one partition to a long-lived consumer (which keeps its learned broker through the outage:
`metadata.recovery.strategy=none`, so it asks the restarted broker on every run), stop the only broker, take
`/controller` in ZooKeeper so that the restarted broker cannot learn the cluster, start it, release the node
`--hold` seconds after the broker accepts connections, produce records, and watch both the long-lived consumer and
a new one for `--watch` seconds. Exit status 1 when the long-lived consumer never received a record again while
the new one did (the bug), 0 when it received them.

    migrator dev-cluster up --name repro
    eval $(migrator dev-cluster env --name repro)
    python scripts/repro/librdkafka_brokerless_metadata.py --bootstrap $BOOTSTRAP_SERVERS --zookeeper $ZOOKEEPER \\
        --stop 'migrator dev-cluster stop broker-1 --name repro' \\
        --start 'migrator dev-cluster start broker-1 --name repro'
    migrator dev-cluster down --name repro
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import time
import uuid

import confluent_kafka
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

CONTROLLER = "/controller"


def accepts(bootstrap: str) -> bool:
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1.0):
            return True
    except OSError:
        return False


def consumer(bootstrap: str, topic: str, **extra: str) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"repro-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, **extra})  # fmt: skip
    c.assign([TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
    return c


def received(c: Consumer, seconds: float) -> int:
    count, until = 0, time.monotonic() + seconds
    while time.monotonic() < until:
        msg = c.poll(0.2)
        if msg is not None and msg.error() is None:
            count += 1
    return count


def produce(bootstrap: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, value=str(i).encode(), partition=0)
    p.flush(30)


def restart_without_metadata(args: argparse.Namespace, zk: KazooClient) -> None:
    """Stop the broker, hold `/controller`, start it, and release the node `--hold` s after it accepts connections."""
    subprocess.run(args.stop, shell=True, check=True)
    deadline = time.monotonic() + 30
    while zk.exists(CONTROLLER) and time.monotonic() < deadline:
        time.sleep(0.2)
    zk.create(CONTROLLER, json.dumps({"version": 1, "brokerid": 99, "timestamp": "0"}).encode(), ephemeral=True)
    starting = subprocess.Popen(args.start, shell=True)
    while not accepts(args.bootstrap):
        time.sleep(0.2)
    time.sleep(args.hold)
    zk.delete(CONTROLLER)
    starting.wait(timeout=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--zookeeper", required=True)
    parser.add_argument("--stop", required=True, help="shell command that stops the only broker")
    parser.add_argument("--start", required=True, help="shell command that starts it again (may wait for it)")
    parser.add_argument("--hold", type=float, default=5.0, help="seconds the restarted broker knows no cluster")
    parser.add_argument("--watch", type=float, default=30.0, help="seconds to watch the consumers afterwards")
    args = parser.parse_args()
    print(f"confluent-kafka {confluent_kafka.version()}, librdkafka {confluent_kafka.libversion()[0]}")
    topic = f"repro-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    produce(args.bootstrap, topic, 10)
    old = consumer(args.bootstrap, topic, **{"metadata.recovery.strategy": "none", "reconnect.backoff.max.ms": "1000"})
    print(f"long-lived consumer before the restart: {received(old, 10)} of 10 records")
    zk = KazooClient(hosts=args.zookeeper)
    zk.start(timeout=30)
    try:
        restart_without_metadata(args, zk)
    finally:
        zk.stop()
        zk.close()
    produce(args.bootstrap, topic, 10)
    new = consumer(args.bootstrap, topic)
    got_old, got_new = received(old, args.watch), received(new, 10.0)
    print(f"after the restart, within {args.watch:.0f}s: long-lived consumer {got_old} records, new consumer {got_new}")
    old.close()
    new.close()
    if got_old == 0 and got_new > 0:
        print("BUG PRESENT: the long-lived consumer dropped its brokers and never asked again")
        return 1
    print("not reproduced: the long-lived consumer received records again")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
