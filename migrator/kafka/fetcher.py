"""The record fetcher: one confluent-kafka consumer that fetches the connector's owned partitions by
explicit assignment (never by group subscription) and routes records to the owning thread's stream.

The worker hands it a complete routing table; the fetch thread applies it between polls with
incremental (un)assigns, so partitions that stay owned keep their position.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as KafkaTopicPartition

from migrator.assign.model import TopicPartition
from migrator.consumer.handoff import Chunk
from migrator.consumer.message import Message
from migrator.consumer.stream import KafkaStream

log = logging.getLogger(__name__)
POLL_S = 0.02  # how long a fetch waits for records before it looks at routing changes again


@dataclass(slots=True)
class Route:
    """Where one partition's records go: its stream, its hand-out epoch, and the next offset expected."""

    stream: KafkaStream
    epoch: int
    next_offset: int


class Fetcher:
    def __init__(
        self,
        bootstrap_servers: str,
        group: str,
        properties: Mapping[str, Any] | None = None,
    ) -> None:
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap_servers,
            "group.id": group,  # librdkafka requires one; the fetcher never subscribes, so it never joins
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 100,
        }
        conf.update(properties or {})
        self._consumer = Consumer(conf)
        self._routes: dict[TopicPartition, Route] = {}
        self._partition_counts: dict[str, int] = {}  # per topic, as of our last metadata refresh
        self._pending: dict[TopicPartition, Route] | None = None
        self._pending_lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"fetcher-{group}", daemon=True)

    @property
    def consumer(self) -> Consumer:
        """The underlying client, for simple (generation -1) Kafka offset commits of legacy connectors."""
        return self._consumer

    def start(self) -> None:
        self._thread.start()

    def route(self, routes: Mapping[TopicPartition, Route]) -> None:
        """Replace the routing table; applied by the fetch thread before its next poll."""
        with self._pending_lock:
            self._pending = dict(routes)
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._consumer.close()

    # -- the fetch thread ----------------------------------------------------------------------------
    def _apply_pending(self) -> None:
        with self._pending_lock:
            pending, self._pending = self._pending, None
        if pending is None:
            return
        removed = [tp for tp in self._routes if tp not in pending]
        added = [tp for tp, r in pending.items() if tp not in self._routes or self._routes[tp].epoch != r.epoch]
        if removed or added:
            # a partition re-opened at a new epoch is re-seeked: unassign then assign at its fetch offset
            readd = [tp for tp in added if tp in self._routes]
            gone = removed + readd
            if gone:
                self._consumer.incremental_unassign([KafkaTopicPartition(t, p) for t, p in gone])
            if added:
                self._refresh_metadata(added)
                self._consumer.incremental_assign(
                    [KafkaTopicPartition(t, p, pending[(t, p)].next_offset) for t, p in added]
                )
        # a kept partition keeps its route (and position); a new or re-opened one starts where the worker says
        self._routes = {tp: (r if tp in added else self._routes[tp]) for tp, r in pending.items()}

    def _refresh_metadata(self, added: list[TopicPartition]) -> None:
        """Partitions added to a topic are unknown to the client's cached metadata until its next refresh
        (minutes away); ask now so that an assignment of a new partition starts fetching at once. Only
        for a topic not seen yet or a partition beyond what it had: a rebalance should not wait for it."""
        topics = sorted({tp.topic for tp in added if tp.partition >= self._partition_counts.get(tp.topic, 0)})
        for topic in topics:
            try:
                found = self._consumer.list_topics(topic=topic, timeout=5).topics.get(topic)
            except Exception:  # the fetch loop retries; an assign of an unknown partition waits, it does not fail
                log.warning("metadata refresh of %s failed", topic, exc_info=True)
                continue
            if found is not None and found.error is None:
                self._partition_counts[topic] = len(found.partitions)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._apply_pending()
            if not self._routes:
                self._wake.wait(0.5)
                self._wake.clear()
                continue
            try:
                batch = self._consumer.consume(num_messages=500, timeout=POLL_S)
            except Exception:  # the client is closing or broken; the worker decides what happens next
                log.exception("fetch failed")
                self._stop.wait(0.5)
                continue
            if batch:
                self._dispatch(batch)

    def _dispatch(self, batch: list[Any]) -> None:
        """Group a batch into one chunk per partition and hand each to its thread's stream queue.

        This runs once per record, so it avoids per-record allocations beyond the `Message` itself: a batch
        holds runs of one partition, and the route is looked up once per run.
        """
        chunks: dict[tuple[str, int], tuple[Route, Chunk]] = {}
        routes = self._routes
        last: tuple[str, int] | None = None
        route: Route | None = None
        append = None
        thread_id = ""
        for raw in batch:
            if raw.error() is not None:
                if raw.error().code() != KafkaError._PARTITION_EOF:
                    log.warning("fetch error: %s", raw.error())
                continue
            key = (raw.topic(), raw.partition())
            if key != last:
                last = key
                route = routes.get(key)  # type: ignore[call-overload]
                if route is None:
                    continue
                entry = chunks.get(key)
                if entry is None:
                    entry = chunks[key] = (route, Chunk(TopicPartition(*key), route.epoch, []))
                append = entry[1].messages.append
                thread_id = route.stream.thread_id
            elif route is None:
                continue
            offset = raw.offset()
            if offset < route.next_offset:
                continue  # a record from before a re-seek
            route.next_offset = offset + 1
            ts_type, ts = raw.timestamp()
            append(Message(key[0], key[1], offset, raw.key(), raw.value(), ts if ts_type else -1, thread_id))  # type: ignore[misc]
        for route_, chunk in chunks.values():
            if chunk.messages:
                self._put(route_, chunk)

    def _put(self, route: Route, chunk: Chunk) -> None:
        while not self._stop.is_set():
            try:
                route.stream.queue.put(chunk, timeout=0.1)
                return
            except queue.Full:
                pending = self._pending
                if pending is not None and (chunk.tp not in pending or pending[chunk.tp].epoch != chunk.epoch):
                    return  # the partition is being taken away; the stream would drop it anyway
