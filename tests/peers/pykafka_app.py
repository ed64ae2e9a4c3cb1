"""An application written for pykafka's `BalancedConsumer`, as a pykafka team has it.

    python tests/peers/pykafka_app.py --zookeeper Z --bootstrap B --group G --topic T --log FILE
        [--protocol range|roundrobin]

It runs unchanged in the pykafka peer venv (real pykafka 2.8.0), and, with `pykafka` changed to
`migrator.pykafka` in its imports and nothing else (`tests/integration/test_pykafka_api.py`), in .venv as a
migrator connector. It uses what such programs use: `topics[...]`, `get_balanced_consumer` with pykafka's
arguments, iteration that ends after `consumer_timeout_ms`, `consume()`, `commit_offsets()`, `partitions`,
`held_offsets`, `stop()`, and the message fields. Each processed record is one JSONL line in FILE in the
format of `migrator.observe.records`, written by hand (only the standard library and pykafka's API are
imported). Prints `ready` once started, and on SIGTERM `stopped <json>` with its held offsets; exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time

from pykafka import KafkaClient
from pykafka.common import OffsetType
from pykafka.membershipprotocol import RangeProtocol, RoundRobinProtocol

PROTOCOLS = {"range": RangeProtocol, "roundrobin": RoundRobinProtocol}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    for name in ("zookeeper", "bootstrap", "group", "topic", "log"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--protocol", choices=sorted(PROTOCOLS), default="range")
    return p.parse_args()


def record_line(member: str, topic: str, message, start_ns: int) -> str:
    assert message.partition.id == message.partition_id
    assert message.value.startswith(b"%d-" % message.partition_id), message.value
    line = {"member": member, "thread_id": member, "topic": topic, "partition": message.partition_id,
            "offset": message.offset, "start_ns": start_ns, "end_ns": time.time_ns()}  # fmt: skip
    return json.dumps(line, separators=(",", ":")) + "\n"


def main() -> int:
    args = parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    client = KafkaClient(hosts=args.bootstrap, zookeeper_hosts=args.zookeeper, broker_version="1.0.0")
    topic = client.topics[args.topic.encode()]
    consumer = topic.get_balanced_consumer(
        args.group.encode(),
        auto_commit_enable=True,
        auto_commit_interval_ms=1000,
        auto_offset_reset=OffsetType.EARLIEST,
        consumer_timeout_ms=200,
        membership_protocol=PROTOCOLS[args.protocol],
        rebalance_max_retries=20,
        rebalance_backoff_ms=400,
    )
    member = f"app-{os.getpid()}"
    print("ready", flush=True)
    with open(args.log, "a", encoding="utf-8") as sink:
        while not stop.is_set():
            for message in consumer:  # ends after consumer_timeout_ms without a record
                sink.write(record_line(member, args.topic, message, time.time_ns()))
                sink.flush()
                if stop.is_set():
                    break
            message = consumer.consume(block=False)
            if message is not None:
                sink.write(record_line(member, args.topic, message, time.time_ns()))
                sink.flush()
            consumer.commit_offsets()
    held = {str(p): o for p, o in (consumer.held_offsets or {}).items() if p in consumer.partitions}
    consumer.stop()
    print("stopped " + json.dumps(held), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
