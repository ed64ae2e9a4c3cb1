"""Workloads for group tests: a sequenced producer thread, and in-process members that drain their streams
into a `ProcessingLog`, so tests can hand everything to the observer's verdict."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Producer

from migrator import ConsumerConnector
from migrator.consumer.stream import KafkaStream
from migrator.observe import ProcessingLog
from tests.helpers.kafka import KafkaCluster

TEST_PROPS = {
    "auto.offset.reset": "smallest",
    "rebalance.backoff.ms": "400",
    "auto.commit.interval.ms": "1000",
    "zookeeper.session.timeout.ms": "4000",
}


class SequencedProducer:
    """Produces `seq-<n>` records in a background thread at about `rate` per second; `produced` holds the
    (topic, partition, offset) of every acknowledged record, which is what the verdict compares against."""

    def __init__(self, cluster: KafkaCluster, topic: str, rate: float = 200.0) -> None:
        self._producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
        self._topic = topic
        self._interval = 1.0 / rate
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.produced: set[tuple[str, int, int]] = set()
        self.errors: list[str] = []
        self.sent = 0
        self._thread = threading.Thread(target=self._run, name="sequenced-producer", daemon=True)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        with self._lock:
            if err is not None:
                self.errors.append(str(err))
            else:
                self.produced.add((msg.topic(), msg.partition(), msg.offset()))

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            self._producer.produce(self._topic, value=f"seq-{self.sent}".encode(), on_delivery=self._on_delivery)
            self.sent += 1
            self._producer.poll(0)
            next_at += self._interval
            delay = next_at - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)

    def start(self) -> SequencedProducer:
        self._thread.start()
        return self

    def stop(self) -> set[tuple[str, int, int]]:
        """Stop, wait for every acknowledgement, and return what was produced."""
        self._stop.set()
        self._thread.join(timeout=10)
        remaining = self._producer.flush(30)
        if remaining or self.errors:
            raise AssertionError(f"{remaining} records undelivered; errors {self.errors[:3]}")
        with self._lock:
            return set(self.produced)


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
        self.conn.shutdown()
        for t in self.threads:
            t.join(timeout=10)
        if self.errors:
            raise AssertionError(f"stream threads of {self.name} failed: {self.errors!r}")
