#!/usr/bin/env python3
"""Minimal reproduction of a librdkafka abort (needs only confluent-kafka and a broker you can stop).

    python: rdkafka_queue.h:NNNN: rd_kafka_enq_once_del_source_return: Assertion `eonce->refcnt > 0' failed.

Steps: one AdminClient sends a coordinator-routed request (ListConsumerGroupOffsets; DescribeConsumerGroups and
AlterConsumerGroupOffsets go the same way) while the group coordinator is down, librdkafka's own
`request_timeout` for that request expires while it still waits for the coordinator, and the coordinator comes
back while the client still exists. The process then aborts with SIGABRT within a second or two. Nothing on the
Python side is needed for it: the script waits on the future until librdkafka itself reports the timeout.

Exit status: 0 when the client survived, and the process dies of SIGABRT (134 from a shell) when it did not.

    migrator dev-cluster up --name repro
    python scripts/repro/librdkafka_coord_timeout_abort.py \
        --bootstrap 127.0.0.1:PORT \
        --stop 'migrator dev-cluster stop broker-1 --name repro' \
        --start 'migrator dev-cluster start broker-1 --name repro'
    migrator dev-cluster down --name repro
"""

from __future__ import annotations

import argparse
import subprocess
import time

import confluent_kafka
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--stop", required=True, help="shell command that stops the group's coordinator")
    parser.add_argument("--start", required=True, help="shell command that starts it again")
    parser.add_argument("--conf", action="append", default=[], help="extra client property k=v")
    parser.add_argument("--request-timeout", type=float, default=3.0, help="librdkafka's timeout of the request")
    args = parser.parse_args()
    print(f"confluent-kafka {confluent_kafka.version()[0]}, librdkafka {confluent_kafka.libversion()[0]}", flush=True)

    admin = AdminClient({"bootstrap.servers": args.bootstrap, **dict(kv.split("=", 1) for kv in args.conf)})
    admin.list_topics(timeout=10)  # connected, coordinator reachable
    subprocess.run(args.stop, shell=True, check=True)
    request = [ConsumerGroupTopicPartitions("repro-group", [TopicPartition("repro-topic", 0)])]
    future = admin.list_consumer_group_offsets(request, request_timeout=args.request_timeout)["repro-group"]
    try:
        future.result()  # no Python-side timeout: librdkafka ends the request
        print("unexpected: the request succeeded with the coordinator down", flush=True)
    except KafkaException as exc:
        print(f"librdkafka ended the request: {exc.args[0].str()}", flush=True)
    subprocess.run(args.start, shell=True, check=True)
    deadline = time.monotonic() + 20  # the coordinator is back: the abort comes with the first connection
    while time.monotonic() < deadline:
        admin.list_topics(timeout=5)
        time.sleep(0.5)
    print("the client survived the coordinator's return", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
