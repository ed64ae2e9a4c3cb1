"""A member with a rebalance listener, one thread per stream, each record logged (JSONL) for the observer.

    python tests/apps/listener_app.py ZOOKEEPER GROUP TOPIC CONSUMER_ID LOG [--streams N] [--property K=V]
        [--commit-in-release] [--start-sleep S] [--raise-in release|start] [--process-ms X] [--also TOPIC]

`--commit-in-release` is the old MirrorMaker pattern: `auto.commit.enable=false` (pass it with --property)
and `commit_offsets()` inside `before_releasing_partitions`. Prints `ready`, one `released <json>` per
`before_releasing_partitions` call (its partitions by topic), `starting <ns>` / `started <ns>` around each
`before_starting_fetchers` (wall clock, like the log), `error <ExceptionType>` when a stream raised
something else than a timeout, and `stopped <seconds>` with how long `shutdown()` took after SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Mapping

from common import app_parser, app_props, serve, stop_on_sigterm

from migrator import ConsumerConnector, ConsumerRebalanceListener, ConsumerTimeout, KafkaStream, MigratorError
from migrator.observe import ProcessingLog


class Listener(ConsumerRebalanceListener):
    def __init__(self, args: argparse.Namespace, connector: ConsumerConnector) -> None:
        self.args = args
        self.connector = connector

    def before_releasing_partitions(self, ownership: Mapping[str, set[int]]) -> None:
        print("released " + json.dumps({t: sorted(ps) for t, ps in ownership.items()}), flush=True)
        if self.args.commit_in_release:
            self.connector.commit_offsets()
        if self.args.raise_in == "release":
            raise RuntimeError("the listener's own bug")

    def before_starting_fetchers(self, consumer_id: str, assignment: Mapping[str, Mapping[int, str]]) -> None:
        print(f"starting {time.time_ns()}", flush=True)
        time.sleep(self.args.start_sleep)
        if self.args.raise_in == "start":
            raise RuntimeError("the listener's own bug")
        print(f"started {time.time_ns()}", flush=True)


def main() -> None:
    p = app_parser()
    p.add_argument("--streams", type=int, default=1)
    p.add_argument("--property", action="append", default=[])
    p.add_argument("--commit-in-release", action="store_true")
    p.add_argument("--start-sleep", type=float, default=0.0)
    p.add_argument("--raise-in", choices=["release", "start"])
    p.add_argument("--process-ms", type=float, default=1.0)
    p.add_argument("--also", action="append", default=[], help="another topic, with one stream")
    args = p.parse_args()
    stop = stop_on_sigterm()
    props = app_props(args) | {"consumer.timeout.ms": "200", "rebalance.backoff.ms": "500"}
    props.update(item.split("=", 1) for item in args.property)
    log = ProcessingLog(args.log)
    connector = ConsumerConnector(props)
    connector.set_rebalance_listener(Listener(args, connector))
    member = f"{connector.consumer_id}@{os.getpid()}"

    def work(stream: KafkaStream) -> None:
        it = iter(stream)
        while not stop.is_set():
            try:
                m = next(it)
            except ConsumerTimeout:
                continue
            except MigratorError as exc:
                print(f"error {type(exc).__name__}", flush=True)
                stop.wait(0.5)
                continue
            with log.processing(member, m.thread_id, m.topic, m.partition, m.offset):
                time.sleep(args.process_ms / 1000.0)

    by_topic = connector.create_message_streams({args.topic: args.streams} | {t: 1 for t in args.also})
    streams = [s for topic_streams in by_topic.values() for s in topic_streams]
    serve(streams, work, stop)
    started = time.monotonic()
    if args.commit_in_release:
        connector.commit_offsets()
    connector.shutdown()
    log.close()
    print(f"stopped {time.monotonic() - started:.2f}", flush=True)


if __name__ == "__main__":
    main()
