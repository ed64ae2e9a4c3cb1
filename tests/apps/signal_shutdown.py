"""The main thread runs `for m in stream:`; the SIGTERM handler calls `connector.shutdown()`, which ends the
loop. Each record is logged (JSONL) for the observer.

    python tests/apps/signal_shutdown.py ZOOKEEPER GROUP TOPIC LOG

Prints `ready` once its stream exists and `stopped` after the loop ended.
"""

from __future__ import annotations

import os
import signal
import sys

from migrator import ConsumerConnector
from migrator.observe import ProcessingLog


def main() -> int:
    zookeeper, group, topic, path = sys.argv[1:5]
    log = ProcessingLog(path)
    connector = ConsumerConnector({"zookeeper.connect": zookeeper, "group.id": group, "auto.offset.reset": "smallest"})
    signal.signal(signal.SIGTERM, lambda *_: connector.shutdown())
    member = f"{connector.consumer_id}@{os.getpid()}"
    stream = connector.create_message_streams({topic: 1})[topic][0]
    print("ready", flush=True)
    for m in stream:
        with log.processing(member, m.thread_id, m.topic, m.partition, m.offset):
            pass
    log.close()
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
