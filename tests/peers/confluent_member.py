"""A plain confluent-kafka consumer (Kafka's group coordinator) as its own process, runs in `.venv`:

    python tests/peers/confluent_member.py --bootstrap B --group G --topic T --name N --log FILE [--strategy S]

What a team migrating off pykafka would run: `range` assignment by default, so it shares a group with bridges'
embedded members and managed pykafka consumers; `--strategy cooperative-sticky` for a cooperative group
(KIP-429); `--instance-id` makes it a static member. It commits what it processed every second, in its revoke
callback (before anyone else gets the revoked partitions) and on stop; what it processed of a partition it lost it
never commits. Every processed record is appended to FILE (`migrator.observe.records`), member `<name>@<pid>`.
Prints `ready <name>`; SIGTERM stops it cleanly.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTP

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from migrator.observe import ProcessingLog  # noqa: E402


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    for name in ("bootstrap", "group", "topic", "name", "log"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--strategy", default="range", help="partition.assignment.strategy")
    p.add_argument("--instance-id", default="", help="group.instance.id (KIP-345 static membership)")
    return p.parse_args()


class Committer:
    """The next offsets of what was processed and not yet committed, of the partitions still assigned."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.pending: dict[tuple[str, int], int] = {}

    def revoked(self, consumer: Consumer, partitions: list[KafkaTP]) -> None:
        """Commit before the next owner gets `partitions`, then forget them, committed or not."""
        self.commit()
        self.lost(consumer, partitions)

    def lost(self, _consumer: Consumer, partitions: list[KafkaTP]) -> None:
        """Forget `partitions` without committing: the group has handed them on already. A commit under the lost
        generation is refused (UNKNOWN_MEMBER_ID), and librdkafka answers that refusal by resetting its member id
        and dropping the JoinGroup it has in flight: retried every second, such a commit keeps the consumer out
        of the group, and its pending JoinGroups keep the group's rebalance from ever completing."""
        for tp in partitions:
            self.pending.pop((tp.topic, tp.partition), None)

    def commit(self) -> None:
        if not self.pending:
            return
        offsets = [KafkaTP(t, p, o) for (t, p), o in sorted(self.pending.items())]
        try:
            self.consumer.commit(offsets=offsets, asynchronous=False)
            self.pending.clear()
        except KafkaException as exc:  # e.g. a rebalance in between: the next owner may see these again
            print(f"commit failed: {exc}", file=sys.stderr, flush=True)


def main() -> int:
    args = parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group, "client.id": args.name,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "partition.assignment.strategy": args.strategy, "session.timeout.ms": 10000,
                         "heartbeat.interval.ms": 500, **({"group.instance.id": args.instance_id} if args.instance_id
                                                           else {})})  # fmt: skip
    committer = Committer(consumer)
    consumer.subscribe([args.topic], on_revoke=committer.revoked, on_lost=committer.lost)
    log = ProcessingLog(args.log)
    member = f"{args.name}@{os.getpid()}"
    print(f"ready {args.name}", flush=True)
    last_commit = time.monotonic()
    while not stop.is_set():
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            with log.processing(member, args.name, message.topic(), message.partition(), message.offset()):
                pass
            committer.pending[(message.topic(), message.partition())] = message.offset() + 1
        if time.monotonic() - last_commit >= 1.0:
            committer.commit()
            last_commit = time.monotonic()
    committer.commit()
    consumer.close()
    log.close()
    print(f"stopped {args.name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
