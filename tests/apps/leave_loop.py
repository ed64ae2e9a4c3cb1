"""One thread per stream runs `for m in stream:` and leaves its loop (`break`) once SIGTERM arrived; then the
main thread calls `commit_offsets()` and `shutdown()`. Each record is logged (JSONL) for the observer.

    python tests/apps/leave_loop.py ZOOKEEPER GROUP TOPIC CONSUMER_ID LOG [--streams N] [--process-ms X]
        [--property K=V ...]

Prints `ready` once its streams exist and `stopped <seconds>` with how long commit + shutdown took.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time

from migrator import ConsumerConnector, ConsumerTimeout, KafkaStream
from migrator.observe import ProcessingLog


def main() -> None:
    p = argparse.ArgumentParser()
    for name in ("zookeeper", "group", "topic", "consumer_id", "log"):
        p.add_argument(name)
    p.add_argument("--streams", type=int, default=2)
    p.add_argument("--process-ms", type=float, default=5.0)
    p.add_argument("--property", action="append", default=[], help="another consumer property, K=V")
    args = p.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    log = ProcessingLog(args.log)
    props = {
        "zookeeper.connect": args.zookeeper,
        "group.id": args.group,
        "consumer.id": args.consumer_id,
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": "200",  # so that an idle thread notices the stop too
        "zookeeper.session.timeout.ms": "6000",
    }
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
    threads = [threading.Thread(target=work, args=(s,)) for s in streams]
    for t in threads:
        t.start()
    print("ready", flush=True)
    stop.wait()
    for t in threads:
        t.join()
    started = time.monotonic()
    connector.commit_offsets()
    connector.shutdown()
    log.close()
    print(f"stopped {time.monotonic() - started:.2f}", flush=True)


if __name__ == "__main__":
    main()
