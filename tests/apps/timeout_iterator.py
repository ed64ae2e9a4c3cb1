"""Scala's ConsumerIterator idiom: one iterator, `next()` in a loop, a `ConsumerTimeout` when idle.

    python tests/apps/timeout_iterator.py ZOOKEEPER GROUP TOPIC COUNT

Prints `ready`, `timeout` at each `ConsumerTimeout`, `record <offset>` per record, and exits 0 after COUNT
records; prints `ended` and exits 3 if the iterator stops (it must not while the connector runs).
"""

from __future__ import annotations

import sys

from migrator import ConsumerConnector, ConsumerTimeout


def main() -> int:
    zookeeper, group, topic, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    props = {"zookeeper.connect": zookeeper, "group.id": group, "auto.offset.reset": "smallest",
             "consumer.timeout.ms": "300"}  # fmt: skip
    with ConsumerConnector(props) as connector:
        it = iter(connector.create_message_streams({topic: 1})[topic][0])
        print("ready", flush=True)
        seen = 0
        while seen < count:
            try:
                m = next(it)
            except ConsumerTimeout:
                print("timeout", flush=True)
                continue
            except StopIteration:
                print("ended", flush=True)
                return 3
            seen += 1
            print(f"record {m.offset}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
