"""examples/app.py for asyncio: one task per stream (`async for m in stream.aiter()`), a commit from the
event loop every few records, and a clean stop on SIGTERM/SIGINT.

    python examples/asyncio_app.py consumer.properties TOPIC [STREAMS]

Each record is printed as `<partition> <offset> <value>`; the tests run this program unchanged
(tests/integration/test_example_app.py). docs/application.md explains the rules it follows.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from migrator import ConsumerConnector, ConsumerTimeout, KafkaStream, Message

log = logging.getLogger("example")
COMMIT_EVERY = 10  # records; with auto.commit.enable (the default) the connector also commits on its own


async def handle(m: Message) -> None:
    """The application's work (any awaits). An exception here ends the task; the record is not counted as
    processed, so it is handed out again."""
    sys.stdout.write(f"{m.partition} {m.offset} {(m.value or b'').decode('utf-8', 'replace')}\n")
    sys.stdout.flush()
    await asyncio.sleep(0)


async def work(stream: KafkaStream, connector: ConsumerConnector) -> None:
    """Drain one stream until the connector shuts down (the loop then ends, also for a stream that never got
    a partition)."""
    records = stream.aiter()  # records wait on a thread of their own; the task processes them on the loop
    handled = 0
    while True:
        try:
            async for m in records:
                await handle(m)  # asking for the next record marks this one processed
                handled += 1
                if handled % COMMIT_EVERY == 0:
                    connector.commit_offsets()  # from this task: its record in hand counts, nothing waits
            return
        except ConsumerTimeout:
            continue  # only with consumer.timeout.ms: the same iterator goes on


async def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    properties, topic = argv[1], argv[2]
    streams = int(argv[3]) if len(argv) > 3 else 2
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    with ConsumerConnector(properties) as connector:  # shutdown() when the block ends, whatever happens
        tasks = [
            asyncio.create_task(work(s, connector)) for s in connector.create_message_streams({topic: streams})[topic]
        ]
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait([stopping, *tasks], return_when=asyncio.FIRST_COMPLETED)
        # on a thread: the tasks finish their records on the loop meanwhile, and every stream's loop ends
        await asyncio.to_thread(connector.shutdown)
        stopping.cancel()
        await asyncio.gather(*tasks)  # a task's exception is raised here (its record is handed out again)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv)))
