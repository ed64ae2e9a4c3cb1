#!/usr/bin/env python3
"""Minimal reproduction of a librdkafka SIGSEGV (needs only confluent-kafka and a 3-broker cluster you can restart).

An AdminClient's ListConsumerGroupOffsets whose OffsetFetch is answered NOT_COORDINATOR (or
COORDINATOR_NOT_AVAILABLE) makes `rd_kafka_handle_OffsetFetch` ask the client's consumer group to look up its
coordinator again: `rd_kafka_cgrp_op(rk->rk_cgrp, ...)`. An AdminClient has no consumer group (`rk_cgrp` is
NULL), so the process dies of SIGSEGV in `rd_kafka_cgrp_op` on librdkafka's main thread. Those answers come
while the group's coordinator moves, i.e. while the broker that is coordinator is stopped or restarted.

Steps: commit an offset for a group (so it has a coordinator), ask for its committed offsets in a loop, and stop
and start the coordinator's broker a few times. Exit status 0 when the client survived; the process dies of
SIGSEGV (139 from a shell) when it did not.

    migrator dev-cluster up --name repro --brokers 3
    python scripts/repro/librdkafka_offsetfetch_segv.py --bootstrap 127.0.0.1:PORT1,127.0.0.1:PORT2,... \\
        --stop 'migrator dev-cluster stop broker-{id} --name repro' \\
        --start 'migrator dev-cluster start broker-{id} --name repro'
    migrator dev-cluster down --name repro

`--consumer` reads the same offsets with a never-subscribed Consumer (`committed()`), as the migrator does: that
client has a consumer group, and survives.
"""

from __future__ import annotations

import argparse
import faulthandler
import subprocess
import threading
import time

import confluent_kafka
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def main() -> int:
    faulthandler.enable()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--stop", required=True, help="shell command that stops broker {id}")
    parser.add_argument("--start", required=True, help="shell command that starts broker {id} again")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--down", type=float, default=10.0, help="seconds each coordinator stays down")
    parser.add_argument("--consumer", action="store_true", help="read offsets with a Consumer instead")
    args = parser.parse_args()
    print(f"confluent-kafka {confluent_kafka.version()[0]}, librdkafka {confluent_kafka.libversion()[0]}", flush=True)

    group, topic = f"repro-{time.time_ns()}", "repro-offsetfetch"
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].exception(20)
    time.sleep(2)
    tps = [TopicPartition(topic, p) for p in range(3)]
    committer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": group, "enable.auto.commit": False})
    committer.commit(offsets=[TopicPartition(topic, p, 1) for p in range(3)], asynchronous=False)
    reader = committer if args.consumer else None
    stop = threading.Event()
    answers = {"ok": 0, "error": 0}

    def ask() -> None:
        while not stop.is_set():
            try:
                if reader is not None:
                    reader.committed(tps, timeout=5)
                else:
                    request = [ConsumerGroupTopicPartitions(group, tps)]
                    admin.list_consumer_group_offsets(request, request_timeout=5)[group].result(6)
                answers["ok"] += 1
            except (KafkaException, TimeoutError):
                answers["error"] += 1
            time.sleep(0.05)

    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    for n in range(args.rounds):
        coordinator = admin.describe_consumer_groups([group])[group].result(30).coordinator.id
        print(f"round {n + 1}: stopping coordinator broker {coordinator}", flush=True)
        subprocess.run(args.stop.format(id=coordinator), shell=True, check=True)
        time.sleep(args.down)
        subprocess.run(args.start.format(id=coordinator), shell=True, check=True)
        time.sleep(5)
        print(f"  answers so far: {answers}", flush=True)
    stop.set()
    asker.join(10)
    print("the client survived every coordinator move", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
