"""The workload the demo (and the benchmarks) drive: a sequenced producer, legacy/bridge connectors that
drain their streams into a processing log, and plain Kafka consumers.

Adapted from the test helpers so that production code never imports `tests/`. Every member logs each record
it processes, so the independent observer (`migrator.observe`) can judge the run afterwards.
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from migrator import ConsumerConnector, logs
from migrator.consumer.stream import KafkaStream
from migrator.kafka.commit import GENERATION_MOVED_CODES
from migrator.observe import ProcessingLog
from migrator.observe.records import Handle, Processed
from migrator.protocol.dialect import Dialect

QUIET_LOGGER = "migrator.demo.librdkafka"
"""librdkafka's logs go here (silenced unless --debug): a leaving member's connection chatter is expected.
Repeats are merged as for the bridges' clients: a producer retrying a stopped broker would otherwise log
every few hundred milliseconds, and bury a failing test's report under hundreds of identical lines."""
logs.install((QUIET_LOGGER,))


def quiet_libraries() -> None:
    """Library chatter (kazoo reconnects, librdkafka disconnects of leaving members, the members' own logs)
    is not a result: silence it for a demo or benchmark run."""
    for name in ("kazoo", QUIET_LOGGER, "migrator"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


REQUESTS_PER_CONNECTION = 400.0
"""Produce requests per second one producer connection is given at most. librdkafka sends each partition's
records in a request of their own (librdkafka issue #1700) and a broker serves one connection's requests one
at a time, so thousands of single records a second over hundreds of partitions queue on one connection: any
hiccup of the broker then leaves every partition waiting behind the others for seconds, which consumers see
as a pause that is the producer's."""

CONNECTOR_PROPS = {
    "auto.offset.reset": "smallest",
    "rebalance.backoff.ms": "400",
    "auto.commit.interval.ms": "1000",
    "zookeeper.session.timeout.ms": "6000",
}


PLAIN_HEARTBEAT_MS = 500
"""The plain consumers' Kafka heartbeat. A Kafka rebalance waits for every member's next heartbeat, so a
benchmark comparing bridges with plain consumers gives the bridges' embedded members the same one."""


def layout_properties(dialect: Dialect) -> dict[str, str]:
    """What makes a connector speak `dialect`'s ZooKeeper layout (legacy member and bridge alike)."""
    return {"zookeeper.layout": "pykafka"} if dialect is Dialect.PYKAFKA else {}


def bridge_props(bootstrap: str) -> dict[str, str]:
    """What turns a legacy connector into a KIP-125 bridge, with short timings suited to a live demo."""
    return {
        "coordination.migration.enabled": "true",
        "coordination.migration.bootstrap.servers": bootstrap,
        "coordination.migration.poll.interval.ms": "100",
        "coordination.migration.session.timeout.ms": "6000",
        "offsets.channel.backoff.ms": "200",
    }


class LiveLog(ProcessingLog):
    """A `ProcessingLog` that also remembers, per partition, when a record last started, so a driver can
    wait for every partition to resume without rescanning the whole log."""

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[tuple[str, int], int] = {}

    def end(self, handle: Handle) -> Processed:
        record = super().end(handle)
        self._last[(record.topic, record.partition)] = record.start_ns
        return record

    def extend(self, records: Iterable[Processed]) -> None:
        records = list(records)
        super().extend(records)
        for record in records:
            key = (record.topic, record.partition)
            self._last[key] = max(self._last.get(key, 0), record.start_ns)

    def resumed_since(self, since_ns: int) -> set[tuple[str, int]]:
        """Partitions with a record started at or after `since_ns`."""
        return {tp for tp, t in list(self._last.items()) if t >= since_ns}

    def records_since(self, since_ns: int) -> list[Processed]:
        return [r for r in self.records() if r.start_ns >= since_ns]


_TRANSIENT = (KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION)
"""What a broker that has just restarted can answer before it knows its topics again ("partition count
changed from 8 to 0"): a record refused so is sent again, since the topic is back within seconds."""


def connections_for(rate: float, partitions: int) -> int:
    """How many producer connections keep each under `REQUESTS_PER_CONNECTION` when every record of `rate` a
    second goes to the next of `partitions` in turn (a request each), and no more than there are partitions."""
    return max(1, min(partitions, math.ceil(rate / REQUESTS_PER_CONNECTION)))


class SequencedProducer:
    """Produces `seq-<n>` records at about `rate` per second in a background thread, spreading them over the
    partitions in explicit round robin (so each partition gets a record every `partitions / rate` s, which
    is the resolution of every pause measured from processing). `produced` holds every acknowledged
    (topic, partition, offset): what the verdict compares against."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float, batch: int = 1) -> None:
        config = {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 2,
            "logger": logging.getLogger(QUIET_LOGGER),
        }
        self._producers = [Producer(config) for _ in range(connections_for(rate, partitions))]
        self._topic = topic
        self._partitions = partitions
        self._batch = max(1, batch)
        self._interval = self._batch / rate
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.produced: set[tuple[str, int, int]] = set()
        self.errors: list[str] = []
        self._resend: list[tuple[int, bytes]] = []  # rejected by a broker that did not know the topic yet
        self.sent = 0
        self._thread = threading.Thread(target=self._run, name="sequenced-producer", daemon=True)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        with self._lock:
            if err is not None and err.code() in _TRANSIENT:
                self._resend.append((msg.partition(), msg.value()))
            elif err is not None:
                self.errors.append(str(err))
            else:
                self.produced.add((msg.topic(), msg.partition(), msg.offset()))

    def _produce(self, partition: int, value: bytes) -> bool:
        """Queue one record; False only when the producer stopped while the topic was unknown."""
        while True:
            try:
                self._producer_of(partition).produce(
                    self._topic, value=value, partition=partition, on_delivery=self._on_delivery
                )
                return True
            except BufferError:  # the local queue is full: let deliveries drain, then retry
                self._poll(0.05)
            except KafkaException as exc:
                if exc.args[0].code() not in _TRANSIENT:
                    raise
                if self._stop.is_set():
                    return False
                self._poll(0.1)

    def _producer_of(self, partition: int) -> Producer:
        """Each partition always through the same connection, so its records keep their order."""
        return self._producers[partition % len(self._producers)]

    def _poll(self, timeout_s: float) -> None:
        """Serve every connection's delivery reports; only the first waits up to `timeout_s`."""
        for i, producer in enumerate(self._producers):
            producer.poll(timeout_s if i == 0 else 0)

    def _flush(self, deadline: float) -> int:
        """Flush every connection by `deadline`; the records still undelivered."""
        return sum(producer.flush(max(0.0, deadline - time.monotonic())) for producer in self._producers)

    def _take_resends(self) -> list[tuple[int, bytes]]:
        with self._lock:
            out, self._resend = self._resend, []
        return out

    def _run(self) -> None:
        next_at = time.monotonic()
        partition = itertools.cycle(range(self._partitions))
        while not self._stop.is_set():
            for target, value in self._take_resends():
                if not self._produce(target, value):
                    return
            used: set[Producer] = set()
            for _ in range(self._batch):
                target = next(partition)
                if not self._produce(target, f"seq-{self.sent}".encode()):
                    return
                self.sent += 1
                used.add(self._producer_of(target))
            for producer in used:  # the others are served when their turn in the round robin comes
                producer.poll(0)
            next_at += self._interval
            delay = next_at - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            elif delay < -1.0:
                next_at = time.monotonic()  # fell behind (e.g. a GC pause): do not burst to catch up

    def start(self) -> SequencedProducer:
        self._thread.start()
        return self

    def stop(self, flush_timeout_s: float = 30.0) -> set[tuple[str, int, int]]:
        """Stop, wait (up to `flush_timeout_s`) for every acknowledgement, and return what was produced."""
        self._stop.set()
        self._thread.join(timeout=10)
        deadline = time.monotonic() + flush_timeout_s
        remaining = self._flush(deadline)
        while (resend := self._take_resends()) and time.monotonic() < deadline:
            for target, value in resend:
                self._producer_of(target).produce(
                    self._topic, value=value, partition=target, on_delivery=self._on_delivery
                )
            remaining = self._flush(deadline)
        with self._lock:
            if self._resend:
                self.errors.append(f"{len(self._resend)} records still rejected as unknown at the end")
        if remaining or self.errors:
            raise RuntimeError(f"{remaining} records undelivered; errors {self.errors[:3]}")
        with self._lock:
            return set(self.produced)


class MemberKind(StrEnum):
    """What a demo member is: a legacy connector, a bridge, or a plain Kafka consumer."""

    LEGACY = "legacy"
    BRIDGE = "bridge"
    PLAIN = "plain"

    @property
    def in_zookeeper(self) -> bool:
        """Whether it registers in ZooKeeper (a legacy connector or a bridge)."""
        return self is not MemberKind.PLAIN


@dataclass(frozen=True, slots=True)
class MemberInfo:
    """What the report and the timeline need to know about a member: its kind and its thread ids."""

    name: str
    kind: MemberKind
    consumer_id: str


class ConnectorMember:
    """One in-process legacy connector or bridge whose stream threads log every record they process."""

    def __init__(
        self,
        zookeeper: str,
        group: str,
        name: str,
        topic: str,
        streams: int,
        log: ProcessingLog,
        bootstrap: str | None = None,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        """A bridge when `bootstrap` is given, else a legacy connector (migration disabled)."""
        config = {"zookeeper.connect": zookeeper, "group.id": group, "consumer.id": name, **CONNECTOR_PROPS}
        if bootstrap is not None:
            config.update(bridge_props(bootstrap))
        config.update(extra or {})
        self.conn = ConsumerConnector(config)
        self.info = MemberInfo(name, MemberKind.BRIDGE if bootstrap else MemberKind.LEGACY, self.conn.consumer_id)
        self.log = log
        self.errors: list[BaseException] = []
        self.threads: list[threading.Thread] = []
        self._leaving = threading.Event()
        self.subscribed_ns = time.time_ns()  # when it asked to join (registers): the trigger of a join's pause
        for stream in self.conn.create_message_streams({topic: streams})[topic]:
            t = threading.Thread(target=self._drain, args=(stream,), name=f"drain-{stream.thread_id}", daemon=True)
            t.start()
            self.threads.append(t)

    @property
    def name(self) -> str:
        return self.info.name

    def _drain(self, stream: KafkaStream) -> None:
        member = self.conn.consumer_id
        try:
            for m in stream:
                handle = self.log.start(member, m.thread_id, m.topic, m.partition, m.offset)
                _ = m.value  # "processing": touch the payload
                self.log.end(handle)
                if self._leaving.is_set():
                    break
        except BaseException as exc:  # reported by shutdown()
            self.errors.append(exc)

    def shutdown(self) -> None:
        """Clean leave: commit, release, deregister; raise if a stream thread failed."""
        self.conn.shutdown()
        for t in self.threads:
            t.join(timeout=10)
        if self.errors:
            raise RuntimeError(f"stream threads of {self.name} failed: {self.errors!r}")

    def leave(self, loop_exit_s: float = 5.0) -> dict[str, float]:
        """Leave the way an application on SIGTERM does: each stream thread leaves its `for m in stream:`
        loop after the record in hand, then `commit_offsets()` and `shutdown()`. The record each thread took
        last counts as processed (docs/application.md, "What counts as processed"), so nothing is handed to
        the next owner again. A thread still waiting for a record after `loop_exit_s` is ended by `shutdown()`.
        Returns the seconds each part took, so a benchmark can say where a slow leave spent its time."""
        laps: dict[str, float] = {}
        began = time.monotonic()
        self._leaving.set()
        deadline = began + loop_exit_s
        for t in self.threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        laps["loops left"] = time.monotonic() - began
        self.conn.commit_offsets()
        laps["commit_offsets"] = time.monotonic() - began - sum(laps.values())
        self.shutdown()
        laps["shutdown"] = time.monotonic() - began - sum(laps.values())
        return laps


class PlainConsumer:
    """KIP-125's KC: a confluent-kafka consumer with `group.id`, processing on its own poll thread and
    committing exactly what it processed on every revoke and at close, so a clean leave hands over where it
    stopped; a commit refused because the group moved past this member is dropped, as an application does.
    It records its Kafka assignment over time (`assigned`), which the timeline draws."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topic: str,
        log: ProcessingLog,
        name: str,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """`extra`: more consumer properties, e.g. `partition.assignment.strategy`."""
        self.info = MemberInfo(name, MemberKind.PLAIN, name)
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
                "heartbeat.interval.ms": PLAIN_HEARTBEAT_MS,
                "logger": logging.getLogger(QUIET_LOGGER),
                **(extra or {}),
            }
        )
        self._processed: dict[tuple[str, int], int] = {}
        self._since: dict[tuple[str, int], int] = {}
        self.assigned: list[tuple[str, int, int, int]] = []  # (topic, partition, start_ns, end_ns)
        self._stop = threading.Event()
        self.errors: list[BaseException] = []
        self.joined = threading.Event()
        self.subscribed_ns = 0  # when it asked to join: the trigger of a join's pause
        self._thread = threading.Thread(target=self._run, name=f"plain-{name}", daemon=True)

    @property
    def name(self) -> str:
        return self.info.name

    def start(self) -> PlainConsumer:
        self._thread.start()
        return self

    def assigned_now(self) -> set[int]:
        """The partitions Kafka has given this consumer, as its own callbacks last heard."""
        return {p for _t, p in list(self._since)}

    def _commit(self, consumer: Consumer, only: list[Any] | None = None) -> None:
        keys = {(p.topic, p.partition) for p in only} if only is not None else set(self._processed)
        offsets = [KafkaTopicPartition(t, p, o) for (t, p), o in self._processed.items() if (t, p) in keys]
        if offsets:
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
            except KafkaException as exc:
                if exc.args[0].code() not in GENERATION_MOVED_CODES:
                    raise
                # the group moved past this member: those partitions are someone else's already, so an
                # application drops the offsets (their next owner starts from the last commit) and consumes on
                logging.getLogger(QUIET_LOGGER).info("%s: commit refused (%s); consuming on", self.name, exc)
        for key in keys:
            self._processed.pop(key, None)

    def _on_assign(self, consumer: Consumer, partitions: list[Any]) -> None:
        now = time.time_ns()
        for p in partitions:
            self._since[(p.topic, p.partition)] = now
        self.joined.set()

    def _on_revoke(self, consumer: Consumer, partitions: list[Any]) -> None:
        self._commit(consumer, partitions)
        self._close_assignment({(p.topic, p.partition) for p in partitions})

    def _close_assignment(self, keys: set[tuple[str, int]]) -> None:
        now = time.time_ns()
        for key in keys:
            start = self._since.pop(key, None)
            if start is not None:
                self.assigned.append((key[0], key[1], start, now))

    def _run(self) -> None:
        thread_id = ""
        try:
            self.subscribed_ns = time.time_ns()
            self._consumer.subscribe([self._topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
            while not self._stop.is_set():
                msg = self._consumer.poll(0.05)
                if msg is None:
                    continue
                error = msg.error()
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise RuntimeError(str(error))
                    continue
                topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
                if topic is None or partition is None or offset is None:
                    continue  # only error events lack them
                thread_id = thread_id or f"{self._consumer.memberid() or self.name}-0"
                handle = self._log.start(self.name, thread_id, topic, partition, offset)
                _ = msg.value()
                self._log.end(handle)
                self._processed[(topic, partition)] = offset + 1
            self._commit(self._consumer)
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            self._consumer.close()
            self._close_assignment(set(self._since))

    def shutdown(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        if self.errors:
            raise RuntimeError(f"plain consumer {self.name} failed: {self.errors!r}")
