"""One member of `benchmarks.cost` in its own process: consume until SIGTERM (or `--exit-after` seconds),
writing one JSON line per record to stdout, a pipe the parent counts.

Deliberately light: a plain member imports confluent-kafka only, as a plain application does, and a
connector imports `migrator` only, so each process's RSS is what that kind of application needs.

    python benchmarks/cost_member.py {plain,bridge,legacy} ZOOKEEPER BOOTSTRAP GROUP TOPIC
        [--exit-after S] [--streams N]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import logging
import os
import signal
import sys
import threading
from typing import Any

STREAMS = 4
AUTO_COMMIT_MS = "5000"  # confluent-kafka's default, given to the connectors too: the same commit work
KINDS = ("plain", "bridge", "legacy")
PR_SET_NAME = 15


def emit_line(topic: str | None, partition: int | None, offset: int | None, value: bytes | None) -> None:
    """The work every member does per record: one JSON line written to a pipe."""
    text = value.decode() if value is not None else None
    line = json.dumps({"topic": topic, "partition": partition, "offset": offset, "value": text}) + "\n"
    os.write(1, line.encode())


def plain_consumer(bootstrap: str, group: str) -> Any:
    from confluent_kafka import Consumer

    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "logger": logging.getLogger("quiet")})  # fmt: skip


def poll_loop(consumer: Any, stop: threading.Event) -> None:
    """A plain application's loop: `poll(1.0)`, one line per record, until `stop`; then close."""
    try:
        while not stop.is_set():
            msg = consumer.poll(1.0)
            if msg is None or msg.error() is not None:
                continue
            emit_line(msg.topic(), msg.partition(), msg.offset(), msg.value())
    finally:
        consumer.close()


def run_plain(bootstrap: str, group: str, topic: str, stop: threading.Event) -> None:
    consumer = plain_consumer(bootstrap, group)
    consumer.subscribe([topic])
    poll_loop(consumer, stop)


def run_split_plain(bootstrap: str, group: str, topic: str, stop: threading.Event, clients: int) -> None:
    """A plain application with one confluent-kafka client per thread, each assigned every `clients`-th
    partition and polled `poll(1.0)` by its own thread: what a connector with one client per stream (no
    hand-over between threads) would cost at best, beside the one-client `run_plain`."""
    from confluent_kafka import TopicPartition

    def one(index: int) -> None:
        consumer = plain_consumer(bootstrap, group)
        partitions = sorted(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p) for p in partitions[index::clients]])
        poll_loop(consumer, stop)

    threads = [threading.Thread(target=one, args=(i,), name="run_p", daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run_connector(kind: str, zookeeper: str, bootstrap: str, group: str, topic: str, stop: threading.Event,
                  streams: int = STREAMS) -> None:  # fmt: skip
    from migrator import ConsumerConnector

    config = {"zookeeper.connect": zookeeper, "group.id": group, "auto.offset.reset": "smallest",
              "auto.commit.interval.ms": AUTO_COMMIT_MS}  # fmt: skip
    if kind == "bridge":
        config.update({"coordination.migration.enabled": "true", "coordination.migration.bootstrap.servers": bootstrap})
    connector = ConsumerConnector(config)

    def drain(stream: object) -> None:
        with contextlib.suppress(Exception):  # the stream ends (raises) at shutdown
            for m in stream:  # type: ignore[attr-defined]
                emit_line(m.topic, m.partition, m.offset, m.value)

    threads = [threading.Thread(target=drain, args=(s,), daemon=True)
               for s in connector.create_message_streams({topic: streams})[topic]]  # fmt: skip
    for t in threads:
        t.start()
    stop.wait()
    connector.shutdown()


def name_os_threads() -> None:
    """Give each Python thread's OS thread its Python name (15 bytes, as Linux keeps), so that
    `benchmarks.cost` can tell the threads apart in /proc; librdkafka names its own (`rdk:...`)."""
    try:
        prctl = ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return
    bootstrap = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def named(self: threading.Thread) -> None:
        prctl(PR_SET_NAME, self.name.encode()[:15], 0, 0, 0)
        bootstrap(self)

    threading.Thread._bootstrap_inner = named  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=KINDS)
    for name in ("zookeeper", "bootstrap", "group", "topic"):
        parser.add_argument(name)
    parser.add_argument("--exit-after", type=float, default=0.0)
    parser.add_argument("--streams", type=int, help=f"a connector's streams (default {STREAMS}); a plain member's "
                        "threads, each with its own client (default 1)")  # fmt: skip
    args = parser.parse_args(argv)
    name_os_threads()
    for name in ("kazoo", "migrator", "quiet"):  # a leaving member's chatter is not a result
        logging.getLogger(name).setLevel(logging.CRITICAL)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda _s, _f: stop.set())
    if args.exit_after:
        threading.Timer(args.exit_after, stop.set).start()
    if args.kind == "plain" and (args.streams or 1) > 1:
        work = (args.bootstrap, args.group, args.topic, stop, args.streams)
        worker = threading.Thread(target=run_split_plain, args=work, daemon=True)
    elif args.kind == "plain":
        worker = threading.Thread(target=run_plain, args=(args.bootstrap, args.group, args.topic, stop), daemon=True)
    else:
        work = (args.kind, args.zookeeper, args.bootstrap, args.group, args.topic, stop, args.streams or STREAMS)
        worker = threading.Thread(target=run_connector, args=work, daemon=True)
    worker.start()
    while not stop.wait(1.0):  # the main thread stays free for the signal handler
        pass
    worker.join(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
