"""Processing raises on one record, once: inside `with ConsumerConnector(...)` on the main thread, or in a
worker thread. Each record that was processed without raising is logged (JSONL) for the observer.

    python tests/apps/fail_app.py ZOOKEEPER GROUP TOPIC CONSUMER_ID LOG {with,thread} [--fail-at P:O]

`with`: the exception ends the block (and the process, with its traceback). `thread`: the exception ends
that thread; the process runs on until SIGTERM, then prints `stopped <seconds>` for its `shutdown()`.
Prints `ready` once its stream exists.
"""

from __future__ import annotations

import os
import threading
import time

from common import app_parser, app_props, stop_on_sigterm

from migrator import ConsumerConnector, KafkaStream
from migrator.observe import ProcessingLog


class Failed(Exception):
    pass


def main() -> None:
    p = app_parser()
    p.add_argument("mode", choices=["with", "thread"])
    p.add_argument("--fail-at", default="")
    args = p.parse_args()
    fail_at = tuple(map(int, args.fail_at.split(":"))) if args.fail_at else None
    log = ProcessingLog(args.log)
    props = app_props(args) | {"auto.commit.interval.ms": "200", "rebalance.backoff.ms": "500"}

    def work(stream: KafkaStream, member: str) -> None:
        for m in stream:
            with log.processing(member, m.thread_id, m.topic, m.partition, m.offset):
                time.sleep(0.002)
                if (m.partition, m.offset) == fail_at:
                    raise Failed(f"cannot process {m.partition}:{m.offset}")

    if args.mode == "with":
        with ConsumerConnector(props) as connector:
            stream = connector.create_message_streams({args.topic: 1})[args.topic][0]
            print("ready", flush=True)
            work(stream, f"{connector.consumer_id}@{os.getpid()}")
        return
    stop = stop_on_sigterm()
    connector = ConsumerConnector(props)
    stream = connector.create_message_streams({args.topic: 1})[args.topic][0]
    threading.Thread(target=work, args=(stream, f"{connector.consumer_id}@{os.getpid()}"), daemon=True).start()
    print("ready", flush=True)
    stop.wait()
    started = time.monotonic()
    connector.shutdown()
    print(f"stopped {time.monotonic() - started:.2f}", flush=True)


if __name__ == "__main__":
    main()
