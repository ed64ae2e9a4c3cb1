"""Reading and classifying a slice of the fleet: what one Spark partition (or one plain process) runs.

Each slice opens its own kazoo client per ensemble and its own Kafka adapter (`migrator.kafka.admin.KafkaAdmin`,
the one the connector uses), reads its groups with pipelined requests (`read_groups`, `FleetKafka`) and yields one
row per group. No pyspark here, so
the same code serves executors, the apply step's re-reads, the tests and the benchmark's baseline.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from migrator.errors import UsageError
from migrator.fleet.classify import classify, to_row, with_layout
from migrator.fleet.model import FleetRow, KafkaGroupFacts
from migrator.fleet.trees import mark_from_trees
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.protocol.group_view import GroupView
from migrator.protocol.kafka import KafkaGroup
from migrator.protocol.layout_dialect import GroupLayout
from migrator.protocol.partition import TopicPartition
from migrator.zk.client import ZkTls, connect_problem
from migrator.zk.group_reader import read_groups_with_layout
from migrator.zk.paths import CONSUMERS
from migrator.zk.session import ZkSession, children, close

CHUNK_GROUPS = 500
BATCH_GROUPS = 200  # groups per DescribeGroups
READERS = 8  # committed-offset reads in flight at once (each is one consumer of its group, closed after it)
KAFKA_TIMEOUT_S = 15.0


def now_ms() -> int:
    return int(time.time() * 1000)


def split_ensembles(values: Iterable[str]) -> list[str]:
    """`--zookeeper` values → ensembles: `;` separates ensembles, `,` the hosts of one (repeatable option)."""
    ensembles: list[str] = []
    for value in values:
        for part in value.split(";"):
            part = part.strip()
            if part and part not in ensembles:
                ensembles.append(part)
    if not ensembles:
        raise UsageError("--zookeeper: give at least one ensemble (host:port[,host:port...][/chroot])")
    for ensemble in ensembles:
        problem = connect_problem(ensemble)
        if problem is not None:
            raise UsageError(f"--zookeeper: {problem}")
    return ensembles


def pair_bootstrap(ensembles: Sequence[str], bootstrap: str | None) -> dict[str, str | None]:
    """One Kafka cluster for all ensembles, or one per ensemble (`;`-separated, in the same order)."""
    if not bootstrap:
        return dict.fromkeys(ensembles)
    parts = [b.strip() for b in bootstrap.split(";") if b.strip()]
    if len(parts) == 1:
        return dict.fromkeys(ensembles, parts[0])
    if len(parts) != len(ensembles):
        raise UsageError(
            f"--bootstrap-servers: {len(parts)} clusters for {len(ensembles)} ensembles; give one, or one per ensemble"
        )
    return dict(zip(ensembles, parts, strict=True))


@dataclass(frozen=True)
class ScanSettings:
    """Everything an executor needs; small and picklable."""

    bootstrap: Mapping[str, str | None]
    stable_for_ms: int
    now_ms: int
    group_max_size: Mapping[str, int | None] = field(default_factory=dict)
    zk_auth: str | None = None
    zk_tls: ZkTls | None = None
    """TLS to ZooKeeper's secure client port (`zookeeper.ssl.*` of --command-config)."""
    kafka_properties: Mapping[str, str] = field(default_factory=dict)
    zk_timeout_s: float = 15.0
    kafka_timeout_s: float = KAFKA_TIMEOUT_S
    abandoned_after_ms: int | None = None
    """ABANDONED needs no offset commit for this long (None: the status is not given)."""


def group_filter(include: str | None, exclude: str | None):
    """A predicate over group names from the --include/--exclude regexes (full search, like grep)."""
    try:
        inc = re.compile(include) if include else None
        exc = re.compile(exclude) if exclude else None
    except re.error as err:
        raise UsageError(f"--include/--exclude: bad regular expression: {err}") from err

    def keep(group: str) -> bool:
        return (inc is None or inc.search(group) is not None) and (exc is None or exc.search(group) is None)

    return keep


def list_groups(zk: ZkSession, keep=None) -> list[str]:
    return sorted(g for g in children(zk, CONSUMERS) or () if keep is None or keep(g))


def connect_zk(ensemble: str, settings: ScanSettings) -> ZkSession:
    from migrator.zk.client import connect  # imported late: executors pay for it only when they run

    return connect(ensemble, auth=settings.zk_auth, timeout_s=settings.zk_timeout_s, tls=settings.zk_tls)


def scan_views(
    ensemble: str,
    read: Sequence[tuple[GroupView, GroupLayout]],
    kafka_reader: FleetKafka | None,
    settings: ScanSettings,
) -> list[FleetRow]:
    """Each group's row: its classification, marked when its layout is neither dialect's."""
    views = [view for view, _ in read]
    facts: Mapping[str, KafkaGroupFacts] = kafka_reader.read(views) if kafka_reader is not None else {}
    out = []
    max_size = settings.group_max_size.get(ensemble)
    for view, read_layout in read:
        kafka = facts.get(view.group)
        layout = read_layout.recognition
        c = with_layout(classify(view, kafka, settings.now_ms, settings.stable_for_ms, max_size), layout)
        out.append(to_row(ensemble, view, kafka, c, settings.now_ms, layout))
    return mark_from_trees(ensemble, out, {v.group: v for v in views}, facts, settings)


def scan_slice(items: Iterable[tuple[str, str]], settings: ScanSettings) -> Iterator[FleetRow]:
    """Rows for (ensemble, group) pairs; one Kafka client per ensemble in the slice, one ZooKeeper session per
    chunk of groups (`migrator.zk.wire`, or kazoo for a SASL identity)."""
    by_ensemble: dict[str, list[str]] = {}
    for ensemble, group in items:
        by_ensemble.setdefault(ensemble, []).append(group)
    for ensemble, groups in by_ensemble.items():
        bootstrap = settings.bootstrap.get(ensemble)
        reader = (
            FleetKafka.connect(bootstrap, settings.kafka_properties, settings.kafka_timeout_s) if bootstrap else None
        )
        try:
            for start in range(0, len(groups), CHUNK_GROUPS):
                # without Kafka's log ends nothing reads the offsets' values: only what classification needs
                read = read_chunk(ensemble, groups[start : start + CHUNK_GROUPS], settings, offsets=reader is not None)
                yield from scan_views(ensemble, read, reader, settings)
        finally:
            if reader is not None:
                reader.close()


def read_chunk(
    ensemble: str, groups: Sequence[str], settings: ScanSettings, *, offsets: bool
) -> list[tuple[GroupView, GroupLayout]]:
    """One chunk of groups read in one session: many requests in flight, answers in order."""
    from migrator.zk.wire import WireSession, wire_supported

    if wire_supported(settings.zk_auth):
        with WireSession(ensemble, settings.zk_auth, settings.zk_timeout_s, settings.zk_tls) as session:
            return read_groups_with_layout(session, groups, offsets=offsets)
    zk = connect_zk(ensemble, settings)
    try:
        return read_groups_with_layout(zk, groups, offsets=offsets)
    finally:
        close(zk)


class FleetKafka:
    """The Kafka facts of many groups through one `KafkaAdmin`: every request of a batch is in flight before any
    is awaited. One DescribeGroups carries a batch, the committed-offset reads (one group each) run `READERS` at
    a time, and one ListOffsets covers every partition of the batch.

    A consumer can only ask for named partitions, so the committed offsets read are those of the topics the
    group's ZooKeeper subscriptions and offsets and its Kafka members name; an offset Kafka holds for a topic
    none of them names is not read (a bridge commits every Kafka offset to ZooKeeper too)."""

    def __init__(self, admin: KafkaAdmin) -> None:
        self.admin = admin
        self._topics: dict[str, tuple[int, ...]] | None = None
        self._down: str | None = None  # once metadata fails, the rest of the slice does not wait again

    @classmethod
    def connect(cls, bootstrap: str, properties: Mapping[str, str] | None, timeout_s: float) -> FleetKafka:
        return cls(KafkaAdmin(bootstrap, properties, timeout_s))

    def close(self) -> None:
        self.admin.close()

    def topic_partitions(self, refresh: bool = False) -> dict[str, tuple[int, ...]]:
        """Every topic's partition ids, read once (a scan is a snapshot) unless `refresh`."""
        if self._topics is None or refresh:
            self._topics = {name: ids for name, ids in self.admin.topic_partitions().items() if ids}
        return self._topics

    def _topics_unless_down(self, refresh: bool) -> dict[str, tuple[int, ...]] | None:
        """The topics, or None once metadata failed (`_down` says why)."""
        if self._down is None:
            try:
                return self.topic_partitions(refresh=refresh)
            except KafkaUnavailable as exc:
                self._down = str(exc)
        return None

    def read(self, views: Sequence[GroupView], refresh_topics: bool = False) -> dict[str, KafkaGroupFacts]:
        """Facts for every view's group; a failure is recorded per group instead of failing the batch."""
        facts: dict[str, KafkaGroupFacts] = {}
        for start in range(0, len(views), BATCH_GROUPS):
            facts.update(self._read_batch(views[start : start + BATCH_GROUPS], refresh_topics and start == 0))
        return facts

    def _read_batch(self, views: Sequence[GroupView], refresh_topics: bool) -> dict[str, KafkaGroupFacts]:
        names = [v.group for v in views]
        topics = self._topics_unless_down(refresh_topics)
        if topics is None:
            return {n: KafkaGroupFacts(group=None, error=self._down) for n in names}
        described = self.admin.describe_groups(names)
        groups = {n: g for n, g in described.items() if isinstance(g, KafkaGroup)}
        errors = {n: f"describe group: {g}" for n, g in described.items() if not isinstance(g, KafkaGroup)}
        named = {v.group: _partitions_of_interest(v, groups.get(v.group), {}, topics) for v in views}
        committed = self._committed_all(named, errors)
        interest = {v.group: _partitions_of_interest(v, groups.get(v.group), committed[v.group], topics) for v in views}
        log_end, end_error = self._log_ends(set().union(*interest.values()) if interest else set())
        return {v.group: _facts(v, groups.get(v.group), committed[v.group], log_end, interest[v.group], topics,
                                errors.get(v.group) or end_error) for v in views}  # fmt: skip

    def _committed_all(
        self, named: Mapping[str, set[TopicPartition]], errors: dict[str, str]
    ) -> dict[str, dict[TopicPartition, int]]:
        """Each group's committed offsets (only those it has), `READERS` groups at a time; a failed read is
        recorded in `errors` unless the group already has one."""
        with ThreadPoolExecutor(max(1, min(READERS, len(named))), thread_name_prefix="committed") as pool:
            reads = dict(zip(named, pool.map(lambda n: self._committed(n, named[n]), named), strict=True))
        for n, (_offsets, error) in reads.items():
            if error is not None:
                errors.setdefault(n, f"committed offsets: {error}")
        return {n: offsets for n, (offsets, _error) in reads.items()}

    def _committed(
        self, group: str, partitions: Iterable[TopicPartition]
    ) -> tuple[dict[TopicPartition, int], str | None]:
        try:
            found = self.admin.committed_offsets(group, sorted(partitions), keep_reader=False)
        except KafkaUnavailable as exc:
            return {}, str(exc)
        return {tp: offset for tp, offset in found.items() if offset >= 0}, None

    def _log_ends(self, partitions: set[TopicPartition]) -> tuple[dict[TopicPartition, int], str | None]:
        try:
            return self.admin.log_end_offsets(partitions), None
        except KafkaUnavailable as exc:
            return {}, f"log end offsets: {exc}"


def _facts(
    view: GroupView,
    group: KafkaGroup | None,
    committed: Mapping[TopicPartition, int],
    log_end: Mapping[TopicPartition, int],
    interest: set[TopicPartition],
    topics: Mapping[str, tuple[int, ...]],
    error: str | None,
) -> KafkaGroupFacts:
    return KafkaGroupFacts(
        group=group if error is None else None,
        committed=committed,
        log_end={tp: log_end[tp] for tp in interest if tp in log_end},
        partitions={t: topics[t] for t in _topics_of_interest(view, group, committed) if t in topics},
        error=error,
    )


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
