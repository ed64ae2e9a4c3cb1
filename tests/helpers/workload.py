"""Workloads for group tests: a sequenced producer thread, and in-process members that drain their streams
into a `ProcessingLog`, so tests can hand everything to the observer's verdict."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping

from migrator import ConsumerConnector
from migrator.consumer.stream import KafkaStream
from migrator.demo import workload as demo
from migrator.kafka.admin import KafkaAdmin
from migrator.observe import ProcessingLog
from tests.helpers.kafka import KafkaCluster
from tests.helpers.wait import wait_until

TEST_PROPS = {
    "auto.offset.reset": "smallest",
    "rebalance.backoff.ms": "400",
    "auto.commit.interval.ms": "1000",
    "zookeeper.session.timeout.ms": "4000",
}


class SequencedProducer(demo.SequencedProducer):
    """The demo's sequenced producer (round robin over the topic's partitions) with the tests' signature."""

    def __init__(self, cluster: KafkaCluster, topic: str, rate: float = 200.0) -> None:
        admin = KafkaAdmin(cluster.bootstrap_servers)
        # With several brokers, the one this client asks may not have the new topic's metadata yet.
        partitions = wait_until(lambda: admin.partitions(topic), timeout=30, what=f"partitions of topic {topic}")
        super().__init__(cluster.bootstrap_servers, topic, len(partitions), rate)


RUNNING: set[Member] = set()
"""Members not shut down yet: a test that fails half-way leaves them to `shut_down_leftovers`."""


def shut_down_leftovers() -> int:
    """Shut down the members a test left running (it failed before its own shutdown); how many."""
    left = list(RUNNING)
    for member in left:
        with contextlib.suppress(Exception):  # the test's own failure is the one to report
            member.shutdown()  # leaves RUNNING first, whatever happens next
    return len(left)


class Member:
    """One in-process connector whose stream threads log every record to a shared `ProcessingLog`."""

    def __init__(
        self,
        zookeeper: str,
        group: str,
        consumer_id: str,
        topic_count: Mapping[str, int],
        log: ProcessingLog,
        process_s: float = 0.0,
        **props: str,
    ) -> None:
        config = {"zookeeper.connect": zookeeper, "group.id": group, "consumer.id": consumer_id, **TEST_PROPS,
                  **props}  # fmt: skip
        self.name = consumer_id
        self.conn = ConsumerConnector(config)
        RUNNING.add(self)
        self.log = log
        self.process_s = process_s
        self.threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []
        streams = self.conn.create_message_streams(dict(topic_count))
        for topic_streams in streams.values():
            for stream in topic_streams:
                t = threading.Thread(target=self._drain, args=(stream,), name=f"drain-{stream.thread_id}", daemon=True)
                t.start()
                self.threads.append(t)

    def _drain(self, stream: KafkaStream) -> None:
        try:
            for m in stream:
                with self.log.processing(self.conn.consumer_id, m.thread_id, m.topic, m.partition, m.offset):
                    if self.process_s:
                        time.sleep(self.process_s)
        except BaseException as exc:  # surfaced by the test through `errors`
            self.errors.append(exc)

    def shutdown(self) -> None:
        RUNNING.discard(self)
        self.conn.shutdown()
        for t in self.threads:
            t.join(timeout=10)
        if self.errors:
            raise AssertionError(f"stream threads of {self.name} failed: {self.errors!r}")
