"""`ConsumerConnector`: the legacy ZooKeeper consumer API, and with `coordination.migration.enabled=true`
a KIP-125 bridge. This class only wires the parts together; decisions live in `migrator.coordination`.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from pathlib import Path

from migrator.assign.model import thread_ids
from migrator.config import ConsumerConfig
from migrator.consumer.fork import ForkGuard
from migrator.consumer.handoff import Handoff
from migrator.consumer.listener import ConsumerRebalanceListener
from migrator.consumer.stream import KafkaStream
from migrator.coordination.holdings import Holdings
from migrator.coordination.kafka_group import KafkaGroupTracker
from migrator.coordination.offsets import OffsetStore, member_or_simple_commit
from migrator.coordination.worker import RebalanceWorker, WorkerParts, WorkerSettings
from migrator.errors import ConfigError, MigratorError
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.kafka.fetcher import LOGICAL_OFFSETS, Fetcher
from migrator.kafka.member import EmbeddedMember
from migrator.metrics import RECORDS, ConnectorMetrics, serve
from migrator.protocol import stores
from migrator.protocol.codecs import PATTERN_STATIC, Registration
from migrator.protocol.dialect import Dialect
from migrator.protocol.events import Changed, CommitRequest, Event, SessionLost, SessionRestored, Shutdown, Trigger
from migrator.protocol.filters import TopicFilter, filter_from_registration
from migrator.protocol.partition import TopicPartition
from migrator.zk import session as zk_session
from migrator.zk.brokers import registered_brokers, wait_for_brokers
from migrator.zk.client import connect
from migrator.zk.errors import ZooKeeperError
from migrator.zk.paths import BROKER_IDS, GroupPaths
from migrator.zk.pykafka_group import (
    PykafkaSnapshotReader,
    PykafkaView,
    claim_or_give_way,
    open_pykafka_group,
    rename_own_nodes,
)
from migrator.zk.registry import Registry, Watches
from migrator.zk.session import SessionState
from migrator.zk.snapshot import SnapshotReader

log = logging.getLogger(__name__)

JOIN_WAIT_S = 15.0  # how long a bridge waits for its first Kafka assignment before registering anyway
SHUTDOWN_GRACE_S = 3.0  # shutdown gives up after the longer of the two connect timeouts plus this
CLOSE_STEP_MIN_S = 1.0  # each closing step gets at least this long, even past the deadline
FETCHER_WARM_UP_S = 2.0  # the fetcher's warm-up during the join takes this long at most


def make_consumer_id(group: str, consumer_id: str | None) -> str:
    if consumer_id:
        return f"{group}_{consumer_id}"
    return f"{group}_{socket.gethostname()}-{int(time.time() * 1000)}-{uuid.uuid4().hex[:8]}"


def _bridge_config(cfg: ConsumerConfig) -> ConsumerConfig:
    """A bridge keeps offsets in both stores (KIP-125's MEZKCC) so either coordination resumes exactly.

    KIP-125's migration plan has teams set `offsets.storage=zookeeper` and `dual.commit.enabled=false`
    first; a file that still says so is accepted without a code change, and the bridge says once what it
    does instead."""
    explicit = cfg.explicit_keys
    overridden = []
    if "offsets.storage" in explicit and stores.OffsetStore(cfg.offsets_storage) is not stores.OffsetStore.KAFKA:
        overridden.append(f"offsets.storage={cfg.offsets_storage}")
    if "dual.commit.enabled" in explicit and not cfg.dual_commit_enabled:
        overridden.append("dual.commit.enabled=false")
    if overridden:
        log.warning(
            "%s ignored: a bridge (coordination.migration.enabled=true) commits offsets to Kafka and ZooKeeper "
            "(offsets.storage=kafka, dual.commit.enabled=true) and resumes from the higher of the two",
            " and ".join(overridden),
        )
    return cfg.with_overrides(**{"offsets.storage": "kafka", "dual.commit.enabled": "true"})


def effective_config(cfg: ConsumerConfig) -> ConsumerConfig:
    """The offset stores a connector really uses: a bridge dual-commits (`_bridge_config`); in the pykafka
    dialect, a legacy member and a bridge alike commit to Kafka only, since pykafka reads no offset from
    ZooKeeper (a ZooKeeper offset would only be a second, stale truth beside the one pykafka members use)."""
    if cfg.migration_enabled:
        cfg = _bridge_config(cfg)
    if not Dialect(cfg.zookeeper_layout).offsets_in_zookeeper:
        cfg = cfg.with_overrides(**{"offsets.storage": "kafka", "dual.commit.enabled": "false"})
    return cfg


class ConsumerConnector:
    """One member of a ZooKeeper-coordinated group (Scala's `ZookeeperConsumerConnector`)."""

    def __init__(self, config: ConsumerConfig | Mapping[str, object] | str | Path) -> None:
        if isinstance(config, ConsumerConfig):
            cfg = config
        elif isinstance(config, (str, Path)):
            cfg = ConsumerConfig.from_properties_file(config)
        else:
            cfg = ConsumerConfig.from_mapping(config)
        self.config = cfg = effective_config(cfg)
        self._fork = ForkGuard("connector")
        self.group = cfg.group_id
        self.dialect = Dialect(cfg.zookeeper_layout)
        self.consumer_id = make_consumer_id(cfg.group_id, cfg.consumer_id)
        self.paths = GroupPaths(cfg.group_id)
        self.metrics = ConnectorMetrics(cfg.group_id, self.consumer_id)
        if cfg.metrics_port:
            serve(cfg.metrics_port)
        self._zk = connect(
            cfg.zookeeper_connect,
            auth=cfg.zookeeper_auth,
            timeout_s=cfg.zookeeper_connection_timeout_ms / 1000.0,
            session_timeout_s=cfg.zookeeper_session_timeout_ms / 1000.0,
            tls=cfg.zookeeper_tls,
        )
        self._records = RECORDS.labels(group=cfg.group_id, client_id=self.consumer_id)
        self._handoff = Handoff(on_take=self._took)
        self._listener: ConsumerRebalanceListener | None = None
        self._worker: RebalanceWorker | None = None
        self._member: EmbeddedMember | None = None
        self._fetcher: Fetcher | None = None
        self._pykafka: PykafkaView | None = None
        """The pykafka dialect's view of the group (`zookeeper.layout=pykafka`), else None."""
        self._admin: KafkaAdmin | None = None
        self._streams: dict[tuple[str, str], KafkaStream] = {}
        self._session_lost = False
        self._shutdown_lock = threading.Lock()
        self._closed = False
        self._kafka_timeout_s = cfg.offsets_channel_socket_timeout_ms / 1000.0
        self._give_up_s = max(cfg.zookeeper_connection_timeout_ms / 1000.0, self._kafka_timeout_s) + SHUTDOWN_GRACE_S
        """How long shutdown (and a commit) waits for an unreachable ZooKeeper or Kafka before giving up."""
        self.bootstrap_servers = cfg.bootstrap_servers or self._brokers_from_zookeeper()
        zk_session.listen(self._zk, self._on_session_state)
        self.metrics.zk_session(1)

    # -- public API ----------------------------------------------------------------------------------
    def create_message_streams(self, topic_count: Mapping[str, int]) -> dict[str, list[KafkaStream]]:
        """`n` streams per topic; each stream is drained by one application thread."""
        self._fork.check()
        if not topic_count or any(n < 1 for n in topic_count.values()):
            raise ConfigError("create_message_streams: every topic needs at least one stream")
        result: dict[str, list[KafkaStream]] = {}
        for topic, n in sorted(topic_count.items()):
            result[topic] = [self._stream(topic, t) for t in thread_ids(self.consumer_id, n)]
        self._start(Registration(dict(topic_count), PATTERN_STATIC, int(time.time() * 1000)), sorted(topic_count))
        return result

    def create_message_streams_by_filter(self, topic_filter: TopicFilter, num_streams: int = 1) -> list[KafkaStream]:
        """`num_streams` streams shared by every topic the filter allows, now or later."""
        self._fork.check()
        if num_streams < 1:
            raise ConfigError("create_message_streams_by_filter: num_streams must be at least 1")
        streams = [self._stream("*", t) for t in thread_ids(self.consumer_id, num_streams)]
        registration = Registration({topic_filter.regex: num_streams}, topic_filter.pattern, int(time.time() * 1000))
        self._start(registration, [])
        return streams

    def set_rebalance_listener(self, listener: ConsumerRebalanceListener) -> None:
        self._fork.check()
        self._listener = listener
        if self._worker is not None:
            self._worker.listener = listener

    def commit_offsets(self) -> None:
        """Commit what has been processed; the calling thread's current records count as processed.

        Also from a rebalance listener (the old MirrorMaker pattern with `auto.commit.enable=false`): there it
        runs on the rebalance worker itself and commits the partitions about to be released as well. Once
        `shutdown()` started it does nothing: the shutdown commits (with `auto.commit.enable`)."""
        self._fork.check()
        self._handoff.done_for_current_thread()
        if self._worker is None or not self._worker.alive or self._closed:
            return
        if self._worker.on_worker_thread():
            self._worker.commit_now()
            return
        request = CommitRequest()
        self._worker.post(request)
        try:
            request.done.result(timeout=self._give_up_s)
        except FutureTimeout:
            raise FutureTimeout(
                f"commit_offsets: gave up after {self._give_up_s:g}s: the rebalance worker is busy "
                "(ZooKeeper or Kafka unreachable?); nothing was committed"
            ) from None

    def shutdown(self) -> None:
        """Commit (with `auto.commit.enable`), release, unregister, close. Safe to call more than once, from
        any thread, and from a signal handler that interrupted a thread iterating a stream; the calling
        thread's records in hand count as processed.

        Bounded: with ZooKeeper or Kafka unreachable it returns after about the longer connect timeout
        (`zookeeper.connection.timeout.ms`, `offsets.channel.socket.timeout.ms`) plus a few seconds, logging
        each step it gave up on; what it could not release, the ZooKeeper session's expiry releases.
        In a process forked from the one that created the connector it raises `UsedAfterFork` at once.
        """
        self._fork.check()
        with self._shutdown_lock:
            if self._closed:
                return
            self._closed = True
        deadline = time.monotonic() + self._give_up_s
        self._handoff.done_for_current_thread()
        if self._worker is not None and self._worker.alive:
            self._worker.stop_soon()
            request = Shutdown()
            self._worker.post(request)
            try:
                request.done.result(timeout=max(CLOSE_STEP_MIN_S, deadline - time.monotonic()))
            except FutureTimeout:
                log.error(
                    "shutdown: gave up on the clean release of %d partitions after %.0fs (ZooKeeper or Kafka "
                    "unreachable); their owners go when the ZooKeeper session expires",
                    len(self._worker.owned),
                    self._give_up_s,
                )
        if self._member is not None:
            _bounded("leaving the Kafka group", self._member.close, deadline)
        self._handoff.close()
        for stream in self._streams.values():
            stream.shutdown()
        if self._fetcher is not None:
            _bounded("closing the Kafka fetcher", self._fetcher.close, deadline)
        if self._admin is not None:
            _bounded("closing the Kafka admin client", self._admin.close, deadline)
        zk_session.unlisten(self._zk, self._on_session_state)
        _bounded("closing the ZooKeeper session", self._close_zookeeper, deadline)
        self.metrics.zk_session(0)

    def _close_zookeeper(self) -> None:
        zk_session.close(self._zk)

    def __enter__(self) -> ConsumerConnector:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        """Shut down; when the block ends with an exception, this thread's record in hand (the one whose
        processing raised) is not processed: the partition's next owner gets it again."""
        if exc_type is not None:
            self._handoff.failed(threading.current_thread())
        self.shutdown()

    @property
    def authority(self) -> str:
        return self._worker.state.authority.value if self._worker else "zookeeper"

    @property
    def owned(self) -> dict[TopicPartition, str]:
        """A copy of the current ownership (for tests and the demo; the worker may change it any time)."""
        return dict(self._worker.owned) if self._worker else {}

    # -- wiring --------------------------------------------------------------------------------------
    def _stream(self, topic: str, thread_id: str) -> KafkaStream:
        stream = KafkaStream(thread_id, self._handoff, self.config.consumer_timeout_ms)
        self._streams[(topic, thread_id)] = stream
        return stream

    def _start(self, registration: Registration, static_topics: list[str]) -> None:
        if self._worker is not None:
            raise MigratorError("message streams were already created for this connector")
        self._pykafka = None
        if self.dialect.codec.leaders_matter:
            strategy = self.config.partition_assignment_strategy
            self._pykafka = open_pykafka_group(self._zk, self.group, registration, strategy, self.consumer_id)
        self.paths = GroupPaths(self.group, self.dialect.codec.naming(self._pykafka))
        if not self.bootstrap_servers:
            self.bootstrap_servers = self._wait_for_brokers()
        cfg = self.config
        self._fetcher = Fetcher(self.bootstrap_servers, self.group, _fetcher_properties(cfg))
        for stream in self._streams.values():
            stream.attach(self._fetcher)  # a stream with nothing queued fetches for itself
        self._admin = KafkaAdmin(self.bootstrap_servers, cfg.kafka_properties, timeout_s=self._kafka_timeout_s)
        if cfg.migration_enabled:
            member_props = cfg.embedded_member_properties(self.consumer_id) | {
                "bootstrap.servers": self.bootstrap_servers
            }
            self._member = EmbeddedMember(member_props, cfg.migration_poll_interval_ms, self._post)
        self._worker = self._new_worker(registration, self._fetcher, self._admin)
        if self._listener is not None:
            self._worker.listener = self._listener
        self._fetcher.start()
        self._worker.start_watches()
        if self._member is not None and self._pykafka is not None:
            self._member.start([])  # the worker has it join once no pykafka member is registered
        elif self._member is not None:
            self._join_kafka_group(self._member, self._admin, static_topics or self._wildcard_topics(registration))
        self._worker.register()
        self._worker.start()

    def _took(self, records: int) -> None:
        """A stream took `records`: counted, and the embedded member told, whose poll thread waits in short
        slices while the streams are busy (an application's `commit_offsets()` goes through it)."""
        self._records.inc(records)
        if self._member is not None:
            self._member.handing_out()

    def _post(self, event: Event) -> None:
        """Hand an event to the worker: the embedded member's and the watches' callback. Both start only after
        the worker exists."""
        assert self._worker is not None
        self._worker.post(event)

    def _new_worker(self, registration: Registration, fetcher: Fetcher, admin: KafkaAdmin) -> RebalanceWorker:
        cfg = self.config
        bridge = cfg.migration_enabled
        tracker = KafkaGroupTracker(self.group, self.consumer_id, self._member, admin) if self._member else None
        offsets = self._offset_store(fetcher, admin, tracker)
        settings = WorkerSettings(
            consumer_id=self.consumer_id,
            strategy=self._pykafka.assign if self._pykafka else cfg.partition_assignment_strategy,
            max_retries=cfg.rebalance_max_retries,
            backoff_ms=cfg.rebalance_backoff_ms,
            auto_commit_interval_ms=cfg.auto_commit_interval_ms if cfg.auto_commit_enable else None,
            bootstrap_servers=self.bootstrap_servers,
            kafka_beside_legacy=self._pykafka is None,
        )
        reader = partial(PykafkaSnapshotReader, view=self._pykafka) if self._pykafka else SnapshotReader
        snapshots = reader(
            self._zk,
            self.paths,
            exclude_internal=cfg.exclude_internal_topics,
            kafka_partitions=admin.partitions,
            kafka_topics=lambda: sorted(admin.topics()),
        )
        parts = WorkerParts(
            snapshots=snapshots,
            registry=Registry(self._zk, self.paths, self.consumer_id, bridge, self._registration_codec()),
            watches=Watches(
                self._zk,
                self.paths,
                lambda what: self._post(Changed(what)),
                bridge,
                brokers=bool(self._pykafka),
                own_id=self.consumer_id,
            ),
            holdings=self._holdings(fetcher, offsets),
            offsets=offsets,
            handoff=self._handoff,
            metrics=self.metrics,
            kafka=tracker,
            admin=admin,
            fetch_state=lambda: fetcher.fetch_state,
            owner_upkeep=partial(rename_own_nodes, self._zk, self.paths, self._pykafka) if self._pykafka else None,
        )
        fetcher.on_health_change = lambda _state: self._post(Changed(Trigger.FETCH))
        return RebalanceWorker(settings=settings, registration=registration, parts=parts)

    def _registration_codec(self) -> Callable[[Registration], bytes]:
        """How this member writes its `ids` node: the topic name in the pykafka dialect, else Scala's JSON."""
        return self.dialect.codec.encode_registration

    def _offset_store(self, fetcher: Fetcher, admin: KafkaAdmin, tracker: KafkaGroupTracker | None) -> OffsetStore:
        """Kafka commits go through the embedded member (with its generation) or, for a legacy connector, the
        fetcher (a simple commit); committed Kafka offsets are read with the admin client: asking the embedded
        member would block while its own rebalance callback waits for the worker."""
        cfg = self.config
        commit: Callable[[Mapping[TopicPartition, int], float], set[TopicPartition]]
        commit = self._member.commit if self._member is not None else fetcher.commit
        available = tracker.coordinated if tracker is not None else lambda: True
        if self._pykafka is not None and tracker is not None:
            commit, available = (
                member_or_simple_commit(tracker.member.commit, fetcher.commit),
                lambda: True,
            )
        return OffsetStore(
            self._zk,
            self.paths,
            stores.OffsetStore(cfg.offsets_storage),
            cfg.dual_commit_enabled,
            _KafkaOffsets(commit, admin, self.group),
            self.metrics,
            cfg.offsets_commit_max_retries,
            cfg.offsets_channel_backoff_ms,
            kafka_available=available,
            commit_timeout_s=self._kafka_timeout_s,
            durable_release=self._pykafka is not None,
        )

    def _holdings(self, fetcher: Fetcher, offsets: OffsetStore) -> Holdings:
        cfg = self.config
        return Holdings(
            zk=self._zk,
            paths=self.paths,
            fetcher=fetcher,
            handoff=self._handoff,
            streams=self._streams,
            offsets=offsets,
            metrics=self.metrics,
            backoff_s=cfg.rebalance_backoff_ms / 1000.0,
            resolve_start=self._resolve_start,
            commit_on_release=cfg.auto_commit_enable,
            claim_owners=partial(claim_or_give_way, self._zk, self.paths, self._pykafka) if self._pykafka else None,
        )

    def _join_kafka_group(self, member: EmbeddedMember, admin: KafkaAdmin, topics: list[str]) -> None:
        """Start the embedded member and wait up to `JOIN_WAIT_S` for its first assignment, warming up the Kafka
        clients and reading the group meanwhile; a member not in the group by then joins later, and the worker
        obeys ZooKeeper until it has."""
        member.start(topics)
        deadline = time.monotonic() + JOIN_WAIT_S
        assert self._fetcher is not None and self._worker is not None
        warming = [
            threading.Thread(target=_warm_up, args=(admin, self.group, topics), name="warm-up", daemon=True),
            threading.Thread(
                target=self._fetcher.connect, args=(topics, FETCHER_WARM_UP_S), name="fetcher-warm-up", daemon=True
            ),
        ]
        for thread in warming:
            thread.start()
        self._worker.preread()  # the group's other members revoke meanwhile: the JoinGroup waits for them
        if not member.joined.wait(JOIN_WAIT_S):
            log.warning("embedded member not in the Kafka group after %.0fs; obeying ZooKeeper", JOIN_WAIT_S)
        for thread in warming:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _wildcard_topics(self, registration: Registration) -> list[str]:
        assert self._admin is not None
        ((regex, _),) = registration.subscription.items()
        topic_filter = filter_from_registration(registration.pattern, regex)
        return sorted(
            t for t in self._admin.topics() if topic_filter.is_allowed(t, self.config.exclude_internal_topics)
        )

    def _resolve_start(self, fetched: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Committed offsets as they are; where there is none, the logical offset `auto.offset.reset` names.

        The fetcher resolves a logical offset when it starts fetching, so a partition added a moment ago needs
        no metadata here; nothing is committed for it until a record has been processed.
        """
        reset = LOGICAL_OFFSETS[self.config.offset_reset]
        return {tp: (offset if offset >= 0 else reset) for tp, offset in fetched.items()}

    def _brokers_from_zookeeper(self) -> str:
        """Like the Scala connector: find the brokers under /brokers/ids when none are configured."""
        try:
            return registered_brokers(self._zk, self.config.security_protocol)
        except ZooKeeperError:
            return ""

    def _wait_for_brokers(self) -> str:
        """No broker was registered when the connector was built: wait for one, up to the longer connect timeout
        (Scala's connector retries until one appears; ours needs one for its fetcher)."""
        wait_s = self._give_up_s - SHUTDOWN_GRACE_S
        log.warning("no Kafka brokers registered under %s yet; waiting up to %.0fs for one", BROKER_IDS, wait_s)
        found = wait_for_brokers(self._zk, wait_s, self.config.security_protocol)
        if not found:
            raise MigratorError(
                f"no Kafka brokers registered under {BROKER_IDS} within {wait_s:g}s and no bootstrap.servers configured"
            )
        log.info("Kafka brokers registered: %s", found)
        return found

    def _on_session_state(self, state: SessionState) -> None:
        """Runs on kazoo's thread: gate hand-outs at once, leave the rest to the worker."""
        if state == SessionState.SUSPENDED:
            self._handoff.suspend()
            self.metrics.zk_session(0.5)
        elif state == SessionState.LOST:
            self._handoff.suspend()
            self._session_lost = True
            self.metrics.zk_session(0)
            if self._worker is not None:
                self._worker.post(SessionLost())
        elif state == SessionState.CONNECTED:
            self.metrics.zk_session(1)
            if self._session_lost:
                self._session_lost = False
                if self._worker is not None:
                    self._worker.post(SessionRestored())
            else:
                self._handoff.resume()


def _fetcher_properties(cfg: ConsumerConfig) -> dict[str, object]:
    """The record fetcher's librdkafka settings from the connector's properties, then `kafka.*` and `fetcher.*`
    (more specific wins)."""
    return {
        "client.id": cfg.client_id,
        "fetch.max.bytes": max(cfg.fetch_message_max_bytes, 1048576) * 50,
        "max.partition.fetch.bytes": cfg.fetch_message_max_bytes,
        "fetch.min.bytes": cfg.fetch_min_bytes,
        "fetch.wait.max.ms": cfg.fetch_wait_max_ms,
        "socket.timeout.ms": cfg.socket_timeout_ms,
        "auto.offset.reset": cfg.offset_reset,
        **cfg.fetcher_client_properties(),
    }


def _bounded(what: str, close: Callable[[], None], deadline: float) -> None:
    """Run one closing step on its own (daemon) thread and stop waiting for it at `deadline`: a client library
    blocked on an unreachable server (kazoo's stop joins callbacks that retry forever, librdkafka's close waits
    for its coordinator) must not keep the application from exiting."""
    step = threading.Thread(target=close, name=f"shutdown: {what}", daemon=True)
    step.start()
    step.join(max(CLOSE_STEP_MIN_S, deadline - time.monotonic()))
    if step.is_alive():
        log.error("shutdown: gave up on %s (its server is unreachable); exiting without it", what)


def _warm_up(admin: KafkaAdmin, group: str, topics: list[str]) -> None:
    """While the embedded member joins, connect the admin client and its offsets reader to the group's
    coordinator: the new bridge's first claim describes the group and reads committed offsets, its
    partitions wait for that claim, and each cold client added a coordinator lookup and a connection.
    Read-only; when Kafka does not answer, the first claim finds out for itself."""
    try:
        admin.describe_group(group)
        if topics:
            admin.committed_offsets(group, [TopicPartition(topics[0], 0)])
    except KafkaUnavailable as exc:
        log.debug("warming up the Kafka clients failed: %s", exc)


class _KafkaOffsets:
    """Commits through `commit` (the embedded member's, with its generation; or a legacy connector's simple
    commit with generation -1, which the broker takes only for a group without live Kafka members: why
    KIP-125 asks legacy members to commit to ZooKeeper); reads through the admin client."""

    def __init__(
        self,
        commit: Callable[[Mapping[TopicPartition, int], float], set[TopicPartition]],
        admin: KafkaAdmin,
        group: str,
    ) -> None:
        self._commit = commit
        self._admin = admin
        self._group = group

    def commit(self, offsets: Mapping[TopicPartition, int], timeout_s: float) -> set[TopicPartition]:
        return self._commit(offsets, timeout_s)

    def committed(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return self._admin.committed_offsets(self._group, tps)
