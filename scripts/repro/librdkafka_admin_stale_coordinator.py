#!/usr/bin/env python3
"""Minimal reproduction: an AdminClient keeps asking a broker that is no longer the group's coordinator.

librdkafka's coordinator requests (DescribeConsumerGroups, AlterConsumerGroupOffsets, ...) look the group's
coordinator up in a per-client cache first. A NOT_COORDINATOR answer fails the request but does not evict the entry
(`rd_kafka_coord_cache_evict` is called only by the transaction manager), and an entry expires only after
`metadata.max.age.ms` (15 min by default) without use. A client asked about the group every few seconds therefore
keeps sending to the wrong broker for as long as that broker stays up.

When the coordinator moves away from a broker that stays up, e.g. the controller's preferred-leader election
returning `__consumer_offsets` partitions to a restarted broker, every later request of such a client fails, while a
new client answers at once.

Steps: give a group a committed offset, describe it once a second with one long-lived client, stop the coordinator's
broker (the coordinator moves; the client caches the new one), start it again, run a preferred-leader election (as
the controller does by itself every `leader.imbalance.check.interval.seconds`), and compare the long-lived client
with a new one for `--watch` seconds. Exit status 1 when the long-lived client never answered again (the bug), 0
when it did.

    migrator dev-cluster up --name repro --brokers 3
    python scripts/repro/librdkafka_admin_stale_coordinator.py --bootstrap 127.0.0.1:PORT1,127.0.0.1:PORT2,... \\
        --stop 'migrator dev-cluster stop broker-{id} --name repro' \\
        --start 'migrator dev-cluster start broker-{id} --name repro'
    migrator dev-cluster down --name repro
"""

from __future__ import annotations

import argparse
import subprocess
import time

import confluent_kafka
from confluent_kafka import Consumer, ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def describe(admin: AdminClient, group: str) -> str:
    """'coordinator N', or the error's name."""
    try:
        future = admin.describe_consumer_groups([group], request_timeout=10)[group]
        return f"coordinator {future.result(15).coordinator.id}"
    except KafkaException as exc:
        error = exc.args[0]
        return error.name() if isinstance(error, KafkaError) else str(exc)
    except TimeoutError:
        return "no answer in 15 s"


def elect_preferred(bootstrap: str, partitions: int) -> None:
    """A preferred-leader election of every `__consumer_offsets` partition, retried until the controller answers."""
    tps = [TopicPartition("__consumer_offsets", p) for p in range(partitions)]
    for _ in range(60):  # the restarted broker must first be back in the partitions' ISR
        admin = AdminClient({"bootstrap.servers": bootstrap})  # a new client: it finds the current controller
        try:
            errors = admin.elect_leaders(ElectionType.PREFERRED, tps).result(30)
        except KafkaException as exc:
            errors = {None: exc}
        pending = {tp: e for tp, e in errors.items() if e is not None and "ELECTION_NOT_NEEDED" not in str(e)}
        if not pending:
            print("  preferred leaders elected", flush=True)
            return
        time.sleep(1)
    print(f"  the preferred-leader election did not succeed: {pending}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--stop", required=True, help="shell command that stops broker {id}")
    parser.add_argument("--start", required=True, help="shell command that starts broker {id} again")
    parser.add_argument(
        "--down",
        type=float,
        default=10.0,
        help="seconds the coordinator stays down at least (until the long-lived client answered)",
    )
    parser.add_argument("--watch", type=float, default=30.0, help="seconds to compare the clients afterwards")
    args = parser.parse_args()
    print(f"confluent-kafka {confluent_kafka.version()}, librdkafka {confluent_kafka.libversion()[0]}", flush=True)

    group, topic = f"repro-{time.time_ns()}", "repro-stale-coordinator"
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].exception(20)
    time.sleep(2)
    committer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": group, "enable.auto.commit": False})
    committer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    committer.close()
    offsets_partitions = len(admin.list_topics(timeout=10).topics["__consumer_offsets"].partitions)

    home = int(describe(admin, group).split()[-1])
    print(f"stopping broker {home}, the group's coordinator", flush=True)
    subprocess.run(args.stop.format(id=home), shell=True, check=True)
    until = time.monotonic() + args.down
    # The long-lived client starts during the outage (as a process or a replaced client does), so the coordinator
    # it caches is the interim one.
    longlived = AdminClient({"bootstrap.servers": args.bootstrap})
    cached = False
    while time.monotonic() < until or not cached:
        answer = describe(longlived, group)
        print(f"  broker {home} down: long-lived client {answer}", flush=True)
        cached = cached or answer.startswith("coordinator")
        time.sleep(1)
    subprocess.run(args.start.format(id=home), shell=True, check=True)
    elect_preferred(args.bootstrap, offsets_partitions)

    answered = False
    until = time.monotonic() + args.watch
    while time.monotonic() < until:
        old, new = describe(longlived, group), describe(AdminClient({"bootstrap.servers": args.bootstrap}), group)
        print(f"  long-lived client: {old}; new client: {new}", flush=True)
        answered = answered or old.startswith("coordinator")
        time.sleep(1)
    if answered:
        print("the long-lived client found the coordinator again", flush=True)
        return 0
    print(f"the long-lived client never answered again in {args.watch:.0f}s (NOT_COORDINATOR from a cached broker)")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
