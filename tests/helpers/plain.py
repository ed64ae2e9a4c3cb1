"""A plain Kafka-coordinated consumer (KIP-125's KC) for mixed-group tests: confluent-kafka with
`group.id`, processing on its poll thread, committing what it processed on every revoke and at close,
so a clean leave hands over exactly where it stopped."""

from __future__ import annotations

import threading
from typing import Any

from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as KafkaTopicPartition

from migrator.observe import ProcessingLog


class PlainConsumer:
    def __init__(self, bootstrap: str, group: str, topic: str, log: ProcessingLog, name: str) -> None:
        self.name = name
        self._log = log
        self._topic = topic
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": name,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
            }
        )
        self._processed: dict[tuple[str, int], int] = {}
        self._stop = threading.Event()
        self.errors: list[BaseException] = []
        self.joined = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"plain-{name}", daemon=True)

    def start(self) -> PlainConsumer:
        self._thread.start()
        return self

    def _commit(self, consumer: Consumer, only: list[Any] | None = None) -> None:
        keys = {(p.topic, p.partition) for p in only} if only is not None else set(self._processed)
        offsets = [KafkaTopicPartition(t, p, o) for (t, p), o in self._processed.items() if (t, p) in keys]
        if offsets:
            consumer.commit(offsets=offsets, asynchronous=False)
        for key in keys:
            self._processed.pop(key, None)

    def _on_assign(self, consumer: Consumer, partitions: list[Any]) -> None:
        self.joined.set()

    def _on_revoke(self, consumer: Consumer, partitions: list[Any]) -> None:
        self._commit(consumer, partitions)

    def _run(self) -> None:
        member = ""
        try:
            self._consumer.subscribe([self._topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
            while not self._stop.is_set():
                msg = self._consumer.poll(0.05)
                if msg is None:
                    continue
                if msg.error() is not None:
                    if msg.error().code() != KafkaError._PARTITION_EOF:
                        raise RuntimeError(str(msg.error()))
                    continue
                member = member or (self._consumer.memberid() or self.name)
                with self._log.processing(self.name, f"{member}-0", msg.topic(), msg.partition(), msg.offset()):
                    pass
                self._processed[(msg.topic(), msg.partition())] = msg.offset() + 1
            self._commit(self._consumer)
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            self._consumer.close()

    def shutdown(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        if self.errors:
            raise AssertionError(f"plain consumer {self.name} failed: {self.errors!r}")
