"""A real pykafka 2.8.0 consumer as its own process; runs in the pykafka peer venv, never in .venv.

    <peer python> tests/peers/pykafka_member.py --zookeeper Z --bootstrap B --group G --topic T --log FILE
        [--protocol range|roundrobin] [--managed] [--process-ms X] [--commit-interval-ms N]

A `BalancedConsumer` (managed=False: ZooKeeper coordination) or, with --managed, a `ManagedBalancedConsumer`
(Kafka's group coordinator), pure-Python path (use_rdkafka=False). Every processed record is appended to FILE
as one JSONL line in the format of `migrator.observe.records` (written here by hand: this interpreter cannot
import migrator), member `<consumer_id>@<pid>`. Offsets are committed to Kafka, as pykafka does, every
--commit-interval-ms and on stop. Prints `ready <consumer_id>` once started; SIGTERM stops it cleanly, exit 0.
Only the standard library and pykafka are imported.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time

from pykafka import KafkaClient
from pykafka.cluster import Cluster
from pykafka.common import OffsetType
from pykafka.membershipprotocol import RangeProtocol, RoundRobinProtocol

PROTOCOLS = {"range": RangeProtocol, "roundrobin": RoundRobinProtocol}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    for name in ("zookeeper", "bootstrap", "group", "topic"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--protocol", choices=sorted(PROTOCOLS), default="range")
    p.add_argument("--managed", action="store_true")
    p.add_argument("--process-ms", type=float, default=0.0)
    p.add_argument("--commit-interval-ms", type=int, default=1000)
    p.add_argument("--log-level", default="WARNING")
    return p.parse_args()


def make_consumer(args: argparse.Namespace):
    client = KafkaClient(hosts=args.bootstrap, zookeeper_hosts=args.zookeeper, broker_version="1.0.0")
    topic = client.topics[args.topic]
    common = dict(
        use_rdkafka=False,
        auto_commit_enable=True,
        auto_commit_interval_ms=args.commit_interval_ms,
        auto_offset_reset=OffsetType.EARLIEST,
        consumer_timeout_ms=200,
        rebalance_max_retries=20,
        rebalance_backoff_ms=400,
    )
    if args.managed:
        return topic.get_balanced_consumer(args.group.encode(), managed=True, **common)
    return topic.get_balanced_consumer(
        args.group.encode(),
        zookeeper_connect=args.zookeeper,
        membership_protocol=PROTOCOLS[args.protocol],
        **common,
    )


def iterate_brokers_on_a_copy() -> None:
    """pykafka 2.8.0's `Cluster.brokers` hands out the live broker table, which its metadata refresh changes
    while other threads iterate it to find the group coordinator (a commit, the autocommitter, a rebalance).
    During a broker restart that raises `RuntimeError: dictionary changed size during iteration`, and raised in
    a background thread pykafka keeps it and raises it again from every later `consume()`, `commit_offsets()`
    and `stop()`. A copy of the table per access removes the race; the documented workaround for pykafka
    applications (docs/pykafka.md, "Known limits"), applied here so that the drills test the group's
    coordination, not this defect."""
    Cluster.brokers = property(lambda cluster: dict(cluster._brokers), doc=Cluster.brokers.__doc__)


def main() -> int:
    args = parse_args()
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(threadName)s %(levelname)s %(name)s %(message)s")  # fmt: skip
    iterate_brokers_on_a_copy()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    consumer = make_consumer(args)
    # A managed consumer learns its member id from Kafka only after joining; name it by its pid instead.
    cid = f"pykafka-managed-{os.getpid()}" if args.managed else consumer._consumer_id.decode()
    member = f"{cid}@{os.getpid()}"
    sink = open(args.log, "a", encoding="utf-8")  # noqa: SIM115
    print(f"ready {cid}", flush=True)
    while not stop.is_set():
        message = consumer.consume(block=True)
        if message is None:
            continue
        start = time.time_ns()
        if args.process_ms:
            time.sleep(args.process_ms / 1000.0)
        line = {"member": member, "thread_id": f"{cid}-0", "topic": args.topic, "partition": message.partition_id,
                "offset": message.offset, "start_ns": start, "end_ns": time.time_ns()}  # fmt: skip
        sink.write(json.dumps(line, separators=(",", ":")) + "\n")
        sink.flush()
    consumer.commit_offsets()
    consumer.stop()
    sink.close()
    print(f"stopped {cid}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
