"""A complete application on migrator's public API: one thread per stream, a rebalance listener, a clean
stop on SIGTERM/SIGINT, and the error handling of docs/application.md.

    python examples/app.py consumer.properties TOPIC [STREAMS]

`consumer.properties` is the legacy consumer's file (see examples/consumer.properties: zookeeper.connect,
group.id, and for a bridge coordination.migration.enabled=true with coordination.migration.bootstrap.servers).
Each record is printed as `<partition> <offset> <value>`; the tests run this program unchanged
(tests/integration/test_example_app.py).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Mapping

from migrator import ConsumerConnector, ConsumerRebalanceListener, ConsumerTimeout, KafkaStream, ListenerError, Message

log = logging.getLogger("example")
print_lock = threading.Lock()


class Listener(ConsumerRebalanceListener):
    """Runs on the connector's rebalance thread: keep it short, and let exceptions mean "stop this member"."""

    def before_releasing_partitions(self, ownership: Mapping[str, set[int]]) -> None:
        log.info("giving up %s", {topic: sorted(partitions) for topic, partitions in ownership.items()})

    def before_starting_fetchers(self, consumer_id: str, assignment: Mapping[str, Mapping[int, str]]) -> None:
        mine = {
            t: sorted(p for p, th in ps.items() if th.startswith(consumer_id + "-")) for t, ps in assignment.items()
        }
        log.info("starting on %s", mine)


def handle(m: Message) -> None:
    """The application's work. An exception here ends the thread; the record is not counted as processed,
    so the partition's next owner (or this program's next run) gets it again."""
    with print_lock:
        sys.stdout.write(f"{m.partition} {m.offset} {(m.value or b'').decode('utf-8', 'replace')}\n")
        sys.stdout.flush()


def work(stream: KafkaStream) -> None:
    """Drain one stream until the connector shuts down (the `for` loop then ends, also for a stream that
    never got a partition)."""
    while True:
        try:
            for m in stream:
                handle(m)  # asking for the next record marks this one processed
            return
        except ConsumerTimeout:
            continue  # only with consumer.timeout.ms: idle for a while; go on with the same stream
        except ListenerError:
            log.error("the rebalance listener failed; this member has left the group")
            return


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    properties, topic = argv[1], argv[2]
    streams = int(argv[3]) if len(argv) > 3 else 2
    stop = threading.Event()
    with ConsumerConnector(properties) as connector:  # shutdown() when the block ends, whatever happens

        def on_signal(*_: object) -> None:
            # shutdown() lets every thread finish its record, commits (auto.commit.enable), leaves the group
            # and ends every stream's loop, those without a partition too
            stop.set()
            connector.shutdown()

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, on_signal)
        connector.set_rebalance_listener(Listener())
        threads = [
            threading.Thread(target=work, args=(stream,), name=stream.thread_id)
            for stream in connector.create_message_streams({topic: streams})[topic]
        ]
        for t in threads:
            t.start()
        while not stop.wait(1.0):
            if not all(t.is_alive() for t in threads):
                log.error("a processing thread died; stopping")
                stop.set()
                connector.shutdown()
        for t in threads:
            t.join()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
