"""Kafka facts for many groups at once: every admin request of a batch is in flight before any is awaited.

`migrator.kafka.admin.KafkaAdmin` answers one group per call, which costs a round trip per group; a scan
of thousands of groups would spend its time waiting. Here one DescribeGroups carries a whole batch, the
committed-offset reads (one group each) run `READERS` at a time, and one ListOffsets covers every partition
of the batch. Results come back as the same immutable views.

Committed offsets are read as `migrator.kafka.admin` reads them, with a never-subscribed consumer of the group,
never with the AdminClient's ListConsumerGroupOffsets: that request crashes the process (SIGSEGV in librdkafka)
when it is answered while the group's coordinator moves (docs/runbook.md). A consumer can only ask for named
partitions, so the partitions read are those of the topics the group's ZooKeeper subscriptions and offsets and
its Kafka members name; an offset Kafka holds for a topic none of them names is not read (a bridge commits every
Kafka offset to ZooKeeper too).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from migrator.fleet.model import KafkaGroupFacts
from migrator.kafka.admin import (
    COORDINATOR_MARGIN_S,
    KafkaUnavailable,
    admin_config,
    group_from_description,
    offsets_reader,
    read_committed,
)
from migrator.protocol.group_view import GroupView
from migrator.protocol.kafka import KafkaGroup
from migrator.protocol.partition import TopicPartition

DEFAULT_TIMEOUT_S = 15.0
BATCH_GROUPS = 200
READERS = 8  # committed-offset reads in flight at once (each is one consumer of its group, closed after it)


def _tp(tp: KafkaTopicPartition) -> TopicPartition:
    return TopicPartition(tp.topic, tp.partition)


def _error(exc: BaseException) -> str:
    if isinstance(exc, KafkaException) and exc.args:
        inner = exc.args[0]
        return inner.str() if hasattr(inner, "str") else str(inner)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class FleetKafkaReader:
    """One AdminClient per Spark partition (or per apply run); `close()` is a no-op kept for symmetry."""

    def __init__(
        self,
        bootstrap_servers: str,
        properties: Mapping[str, str] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.timeout_s = timeout_s
        self._conf = admin_config(bootstrap_servers, properties, timeout_s)
        self._admin = AdminClient(self._conf)
        self._topics: dict[str, tuple[int, ...]] | None = None
        self._down: str | None = None  # once metadata fails, the rest of the slice does not wait again

    def _wait(self, future: Future[Any], deadline: float | None = None) -> Any:
        return future.result(timeout=self.timeout_s if deadline is None else max(0.0, deadline - time.monotonic()))

    def topic_partitions(self, refresh: bool = False) -> dict[str, tuple[int, ...]]:
        """Every topic's partition ids, read once per reader (a scan is a snapshot)."""
        if self._topics is None or refresh:
            try:
                md = self._admin.list_topics(timeout=self.timeout_s)
            except KafkaException as exc:
                raise KafkaUnavailable(f"metadata from {self.bootstrap_servers}: {_error(exc)}") from exc
            self._topics = {
                name: tuple(sorted(t.partitions)) for name, t in md.topics.items() if t.error is None and t.partitions
            }
        return self._topics

    def read(self, views: Sequence[GroupView], refresh_topics: bool = False) -> dict[str, KafkaGroupFacts]:
        """Facts for every view's group; a failure is recorded per group instead of failing the batch."""
        facts: dict[str, KafkaGroupFacts] = {}
        for start in range(0, len(views), BATCH_GROUPS):
            facts.update(self._read_batch(views[start : start + BATCH_GROUPS], refresh_topics and start == 0))
        return facts

    def _read_batch(self, views: Sequence[GroupView], refresh_topics: bool) -> dict[str, KafkaGroupFacts]:
        names = [v.group for v in views]
        if self._down is not None:
            return {n: KafkaGroupFacts(group=None, error=self._down) for n in names}
        try:
            topics = self.topic_partitions(refresh=refresh_topics)
        except KafkaUnavailable as exc:
            self._down = str(exc)
            return {n: KafkaGroupFacts(group=None, error=self._down) for n in names}
        # Coordinator-routed requests must not reach librdkafka's own timeout on a live client (the abort of
        # migrator.kafka.admin): librdkafka gets a margin, the batch one deadline, and a client left with an
        # unanswered one is replaced.
        deadline = time.monotonic() + self.timeout_s
        coordinator_timeout = self.timeout_s + COORDINATOR_MARGIN_S
        described = self._admin.describe_consumer_groups(names, request_timeout=coordinator_timeout)
        groups: dict[str, KafkaGroup | None] = {}
        errors: dict[str, str] = {}
        try:
            for n in names:
                try:
                    groups[n] = group_from_description(n, self._wait(described[n], deadline))
                except Exception as exc:
                    groups[n], errors[n] = None, f"describe group: {_error(exc)}"
        finally:
            if not all(f.done() for f in described.values()):
                self._admin = AdminClient(self._conf)  # the old one is destroyed with its last reference
        named = {v.group: _partitions_of_interest(v, groups.get(v.group), {}, topics) for v in views}
        with ThreadPoolExecutor(min(READERS, len(names)), thread_name_prefix="committed") as pool:
            reads = dict(zip(names, pool.map(lambda n: self._committed(n, named[n]), names), strict=True))
        committed: dict[str, dict[TopicPartition, int]] = {}
        for n, (offsets, error) in reads.items():
            committed[n] = offsets
            if error is not None:
                errors.setdefault(n, f"committed offsets: {error}")
        interest = {v.group: _partitions_of_interest(v, groups.get(v.group), committed[v.group], topics) for v in views}
        log_end, end_error = self._log_ends(set().union(*interest.values()) if interest else set())
        out: dict[str, KafkaGroupFacts] = {}
        for v in views:
            n = v.group
            error = errors.get(n) or end_error
            out[n] = KafkaGroupFacts(
                group=groups[n] if error is None else None,
                committed=committed[n],
                log_end={tp: log_end[tp] for tp in interest[n] if tp in log_end},
                partitions={t: topics[t] for t in _topics_of_interest(v, groups[n], committed[n]) if t in topics},
                error=error,
            )
        return out

    def _committed(
        self, group: str, partitions: Iterable[TopicPartition]
    ) -> tuple[dict[TopicPartition, int], str | None]:
        """The group's committed offsets (only those it has) and the error that kept them from us, if any."""
        if not partitions:
            return {}, None
        reader = offsets_reader(self._conf, group)
        try:
            found = read_committed(reader, group, sorted(partitions), self.timeout_s, self.bootstrap_servers)
            return {tp: offset for tp, offset in found.items() if offset >= 0}, None
        except KafkaUnavailable as exc:
            return {}, str(exc)
        finally:
            reader.close()

    def _log_ends(self, partitions: Iterable[TopicPartition]) -> tuple[dict[TopicPartition, int], str | None]:
        request = {KafkaTopicPartition(t, p): OffsetSpec.latest() for t, p in sorted(partitions)}
        if not request:
            return {}, None
        try:
            futures = self._admin.list_offsets(request, request_timeout=self.timeout_s)
        except KafkaException as exc:
            return {}, f"log end offsets: {_error(exc)}"
        ends: dict[TopicPartition, int] = {}
        for tp, future in futures.items():
            try:
                ends[_tp(tp)] = self._wait(future).offset
            except Exception as exc:
                return ends, f"log end of {tp.topic}-{tp.partition}: {_error(exc)}"
        return ends, None


def _topics_of_interest(view: GroupView, group: KafkaGroup | None, committed: Mapping[TopicPartition, int]) -> set[str]:
    topics = set(view.topics) | {tp.topic for tp in view.offsets} | {tp.topic for tp in committed}
    if group is not None:
        topics |= {tp.topic for m in group.members for tp in m.partitions}
    return topics


def _partitions_of_interest(
    view: GroupView,
    group: KafkaGroup | None,
    committed: Mapping[TopicPartition, int],
    topics: Mapping[str, tuple[int, ...]],
) -> set[TopicPartition]:
    return {TopicPartition(t, p) for t in _topics_of_interest(view, group, committed) for p in topics.get(t, ())}
