"""One thread per stream runs `for m in stream:` and leaves its loop (`break`) once SIGTERM arrived; then the
main thread calls `commit_offsets()` and `shutdown()`. Each record is logged (JSONL) for the observer.

    python tests/apps/leave_loop.py ZOOKEEPER GROUP TOPIC CONSUMER_ID LOG [--streams N] [--process-ms X]
        [--property K=V ...]

Prints `ready` once its streams exist and `stopped <seconds>` with how long commit + shutdown took.
"""

from __future__ import annotations

import os
import time

from common import app_parser, app_props, serve, stop_on_sigterm

from migrator import ConsumerConnector, ConsumerTimeout, KafkaStream
from migrator.observe import ProcessingLog


def main() -> None:
    p = app_parser()
    p.add_argument("--streams", type=int, default=2)
    p.add_argument("--process-ms", type=float, default=5.0)
    p.add_argument("--property", action="append", default=[], help="another consumer property, K=V")
    args = p.parse_args()
    stop = stop_on_sigterm()
    log = ProcessingLog(args.log)
    props = app_props(args) | {"consumer.timeout.ms": "200"}  # so that an idle thread notices the stop too
    props.update(item.split("=", 1) for item in args.property)
    connector = ConsumerConnector(props)
    member = f"{connector.consumer_id}@{os.getpid()}"

    def work(stream: KafkaStream) -> None:
        while not stop.is_set():
            try:
                for m in stream:
                    with log.processing(member, m.thread_id, m.topic, m.partition, m.offset):
                        time.sleep(args.process_ms / 1000.0)
                    if stop.is_set():
                        break
            except ConsumerTimeout:
                continue

    streams = connector.create_message_streams({args.topic: args.streams})[args.topic]
    serve(streams, work, stop)
    started = time.monotonic()
    connector.commit_offsets()
    connector.shutdown()
    log.close()
    print(f"stopped {time.monotonic() - started:.2f}", flush=True)


if __name__ == "__main__":
    main()
