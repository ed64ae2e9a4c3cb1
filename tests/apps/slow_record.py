"""One thread per stream runs `for m in stream:`; one chosen record takes long to process (the slow record
of docs/application.md). SIGTERM's handler calls `shutdown()`. Each record is logged (JSONL), with when its
processing started and ended, for the observer.

    python tests/apps/slow_record.py ZOOKEEPER GROUP TOPIC CONSUMER_ID LOG [--streams N]
        [--slow PARTITION:OFFSET] [--slow-s S] [--property K=V ...]

Prints `ready` once its streams exist, `slow` when the slow record starts, and `stopped` at the end.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

from common import app_parser, app_props

from migrator import ConsumerConnector, KafkaStream
from migrator.observe import ProcessingLog


def main() -> None:
    p = app_parser()
    p.add_argument("--streams", type=int, default=2)
    p.add_argument("--slow", default="")
    p.add_argument("--slow-s", type=float, default=20.0)
    p.add_argument("--property", action="append", default=[], help="another consumer property, K=V")
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = ProcessingLog(args.log)
    props = app_props(args)
    props.update(item.split("=", 1) for item in args.property)
    connector = ConsumerConnector(props)
    signal.signal(signal.SIGTERM, lambda *_: connector.shutdown())
    member = f"{connector.consumer_id}@{os.getpid()}"
    slow = tuple(map(int, args.slow.split(":"))) if args.slow else None

    def work(stream: KafkaStream) -> None:
        for m in stream:
            with log.processing(member, m.thread_id, m.topic, m.partition, m.offset):
                if (m.partition, m.offset) == slow:
                    print("slow", flush=True)
                    time.sleep(args.slow_s)

    streams = connector.create_message_streams({args.topic: args.streams})[args.topic]
    threads = [threading.Thread(target=work, args=(s,)) for s in streams]
    for t in threads:
        t.start()
    print("ready", flush=True)
    for t in threads:
        while t.is_alive():
            t.join(0.5)  # wakes for the signal handler
    log.close()
    print("stopped", flush=True)


if __name__ == "__main__":
    main()
