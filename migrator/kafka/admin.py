"""The one Kafka adapter: admin requests and committed-offset reads in bounded time, with immutable results.

It returns immutable views (no confluent-kafka types leak out) so that decisions elsewhere stay pure, and it
turns every broker failure into a `KafkaUnavailable` subclass naming the protocol error. The connector, the
CLI and the fleet scan all use it, so each librdkafka workaround below exists once (docs/history.md lists why
each is needed; librdkafka issue https://github.com/confluentinc/librdkafka/issues/4605):

- A coordinator-routed request (DescribeConsumerGroups, AlterConsumerGroupOffsets) never reaches librdkafka's
  own timeout on a live client: librdkafka gets `COORDINATOR_MARGIN_S` more than this adapter waits, and a
  client left with such a request unanswered is replaced (destroying it ends the request safely).
  A replaced client is destroyed on a thread of its own, started as soon as that request returns: nothing
  else keeps a reference to it (the errors handed out carry no traceback through it). Destroying it once its
  broker is back can block for as long as the request lives, which the caller must not wait for; left to the
  garbage collector, it would be destroyed later on whatever thread allocates then, e.g. a fetch thread holding
  its poll lock.
- After a NOT_COORDINATOR answer the next coordinator request goes through a new client, which looks the
  coordinator up afresh: librdkafka never forgets a cached coordinator that moved away from a live broker.
- So does the next coordinator request after the client lost a broker (a broker missing from metadata it read
  after one that named it, or a lost connection it reported): librdkafka drops a broker that leaves the
  cluster's metadata, and a coordinator request for it once it is back can go to the dropped broker's handle,
  which never connects again (the request waits out the adapter's timeout).
- Committed offsets are read with a never-subscribed consumer of the group, never with the AdminClient's
  ListConsumerGroupOffsets, which crashes the process when the coordinator moves during the request.
- ListOffsets goes only to partitions whose leader is a live broker: waiting for a stopped leader makes
  librdkafka reconnect to it without backoff, which starves a small host.

Thread-safe: the client swap, the stale-coordinator flag and the reader cache change under one lock; requests
are awaited outside it, so one caller's slow request never holds another's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, OffsetSpec, ResourceType

from migrator.errors import MigratorError
from migrator.logs import librdkafka_logger
from migrator.protocol.kafka import KafkaGroup, KafkaGroupState, KafkaMember
from migrator.protocol.partition import TopicPartition

DEFAULT_TIMEOUT_S = 10.0
COORDINATOR_MARGIN_S = 60.0
"""librdkafka's timeout of a coordinator request exceeds the adapter's wait by this much, so that a client with
an unanswered request is destroyed long before librdkafka's own timer could fire."""
T = TypeVar("T")
K = TypeVar("K")

log = logging.getLogger(__name__)


class KafkaUnavailable(MigratorError):
    """The brokers did not answer in time, or answered with an error (`code`: librdkafka's, when it gave one)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class KafkaTimedOut(KafkaUnavailable):
    """No answer within the adapter's timeout."""


class NotCoordinator(KafkaUnavailable):
    """NOT_COORDINATOR: the broker asked is no longer the group's coordinator (it moved)."""


class CoordinatorNotAvailable(KafkaUnavailable):
    """COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS: the group's coordinator is not serving yet."""


_ERROR_CLASSES: Mapping[int, type[KafkaUnavailable]] = {
    KafkaError.NOT_COORDINATOR: NotCoordinator,
    KafkaError.COORDINATOR_NOT_AVAILABLE: CoordinatorNotAvailable,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS: CoordinatorNotAvailable,
    KafkaError._TIMED_OUT: KafkaTimedOut,
    KafkaError.REQUEST_TIMED_OUT: KafkaTimedOut,
}


BROKER_CONNECTION_LOST: frozenset[int] = frozenset({KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN})
"""Error reports of a client that lost (or could not open) its connection to a broker."""


def lost_a_broker(known: frozenset[int], listed: frozenset[int]) -> bool:
    """Whether metadata listing the brokers `listed` drops one of the brokers `known` from earlier metadata."""
    return bool(known - listed)


class BrokerLoss:
    """Whether one client has lost a broker since it was made: its `error_cb`, and told of the brokers each
    metadata it read lists. Holds no reference to the client or the adapter, so a replaced client is still freed
    by reference counting."""

    def __init__(self) -> None:
        self.reported = False
        self._known: frozenset[int] = frozenset()

    def __call__(self, error: KafkaError) -> None:
        if error.code() in BROKER_CONNECTION_LOST:
            self.reported = True

    def listed(self, brokers: frozenset[int]) -> None:
        self.reported = self.reported or lost_a_broker(self._known, brokers)
        self._known = brokers


def fresh_client_reason(not_coordinator: bool, broker_lost: bool) -> str | None:
    """Why the next coordinator request must go through a new client (see the module docstring), or None."""
    if not_coordinator:
        return "its cached group coordinator answered that it is not the coordinator"
    if broker_lost:
        return "it lost a broker, and may route to that broker's dropped handle once it is back"
    return None


def unavailable(what: str, exc: BaseException) -> KafkaUnavailable:
    """The `KafkaUnavailable` subclass for a confluent-kafka failure of the request `what`."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if isinstance(error, KafkaError):
        cls = _ERROR_CLASSES.get(error.code(), KafkaUnavailable)
        return cls(f"{what}: {error.str()}", error.code())
    return KafkaUnavailable(f"{what}: {exc}" if str(exc) else f"{what}: {type(exc).__name__}")


def admin_config(bootstrap_servers: str, properties: Mapping[str, Any] | None, timeout_s: float) -> dict[str, Any]:
    """Client settings: connection set-up bounded by `timeout_s`, then the pass-through properties."""
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap_servers,
        "socket.connection.setup.timeout.ms": int(timeout_s * 1000),
        "logger": librdkafka_logger(),
    }
    conf.update(properties or {})
    return conf


def _offsets_reader(admin_conf: Mapping[str, Any], group: str) -> Consumer:
    """The consumer that reads a group's committed offsets: the admin client's settings with the group; it never
    subscribes (so never joins the group) and never commits."""
    return Consumer({**admin_conf, "group.id": group, "enable.auto.commit": False, "enable.auto.offset.store": False})


def _read_committed(
    reader: Consumer, group: str, partitions: Iterable[TopicPartition], timeout_s: float, bootstrap_servers: str
) -> dict[TopicPartition, int]:
    """Kafka-committed next offsets of `group` read with its `_offsets_reader`; -1 where the group has none."""
    tps = [KafkaTopicPartition(t, p) for t, p in partitions]
    if not tps:
        return {}
    what = f"list offsets of group {group}"
    try:
        result = reader.committed(tps, timeout=timeout_s)
    except KafkaException as exc:
        failure = unavailable(what, exc)
        if isinstance(failure, KafkaTimedOut):
            raise KafkaTimedOut(f"{what}: no answer from Kafka at {bootstrap_servers} within {timeout_s:g}s") from exc
        raise failure from exc
    finally:
        reader.poll(0)  # hand librdkafka's queued log lines to the `logger` (nothing else polls it)
    return {_tp(tp): (tp.offset if tp.offset >= 0 else -1) for tp in result}


def _destroy_aside(last_reference: list[Any]) -> None:
    """Destroy the client in `last_reference` (its only reference) on a thread of its own. Destroying a client
    whose coordinator request is still pending blocks until that request ends, up to `COORDINATOR_MARGIN_S`
    after the caller stopped waiting, once the broker is back: the caller (a rebalance) must not wait for it.
    Handed over explicitly, it is never left to a garbage collection on whatever thread allocates."""
    threading.Thread(target=last_reference.clear, name="kafka-admin-destroy", daemon=True).start()


def _without_frames(exc: KafkaUnavailable) -> KafkaUnavailable:
    """`exc` with no traceback on it or on its cause: a kept error must not keep the frames it passed through
    alive, nor the Kafka client in their locals (see the module docstring)."""
    exc.__traceback__ = None
    for linked in (exc.__cause__, exc.__context__):
        if linked is not None:
            linked.__traceback__ = None
    return exc


def group_from_description(group: str, desc: Any) -> KafkaGroup:
    """The immutable view of a confluent-kafka `ConsumerGroupDescription`."""
    members = tuple(
        KafkaMember(
            member_id=m.member_id,
            client_id=m.client_id,
            host=m.host,
            group_instance_id=m.group_instance_id,
            partitions=tuple(sorted(_tp(tp) for tp in (m.assignment.topic_partitions or []))),
        )
        for m in desc.members
    )
    state = KafkaGroupState.from_name(getattr(desc.state, "name", str(desc.state)))
    return KafkaGroup(group_id=group, state=state, assignor=desc.partition_assignor or "", members=members)


def _tp(tp: KafkaTopicPartition) -> TopicPartition:
    return TopicPartition(tp.topic, tp.partition)


def live_led(metadata: Any, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    """The partitions whose leader is a live broker in `metadata` (sorted)."""
    live = set(metadata.brokers)
    return sorted(
        tp
        for tp in partitions
        if (t := metadata.topics.get(tp.topic)) is not None
        and (p := t.partitions.get(tp.partition)) is not None
        and p.leader in live
    )


ClientFactory = Callable[[dict[str, Any]], Any]


class KafkaAdmin:
    """Admin calls with one timeout each; `properties` are passed through (e.g. SASL/SSL settings).

    `client_factory` builds the AdminClient from its settings (a seam for the unit tests of client
    replacement). Close it with `close()` (or use it as a context manager)."""

    def __init__(
        self,
        bootstrap_servers: str,
        properties: Mapping[str, Any] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        client_factory: ClientFactory = AdminClient,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.timeout_s = timeout_s
        self._conf = admin_config(bootstrap_servers, properties, timeout_s)
        self._new_client = client_factory
        self._lock = threading.Lock()
        self._broker_loss = BrokerLoss()
        self._client: Any = self._make_client()
        self._readers: dict[str, Consumer] = {}
        """Per group, the consumer that reads its committed offsets (kept: a bridge reads every few seconds)."""
        self._stale_coordinator = False
        """A coordinator request was answered NOT_COORDINATOR: replace the client before the next one."""

    def __enter__(self) -> KafkaAdmin:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the offsets readers and release the admin client; later calls raise `KafkaUnavailable`."""
        with self._lock:
            readers, self._readers = list(self._readers.values()), {}
            self._client = None
        for reader in readers:
            reader.close()

    # -- the client and its replacement --------------------------------------------------------------
    def _make_client(self) -> Any:
        """A new client, with a `BrokerLoss` of its own as the one the next coordinator request looks at."""
        self._broker_loss = BrokerLoss()
        return self._new_client({**self._conf, "error_cb": self._broker_loss})

    def _current(self, coordinator: bool = False) -> Any:
        """The client for the next request; for a coordinator request, a new one when `fresh_client_reason`
        gives one. A replaced client is destroyed on a thread of its own: a request it left behind could block
        its destruction."""
        return self._current_with_loss(coordinator)[0]

    def _current_with_loss(self, coordinator: bool = False) -> tuple[Any, BrokerLoss]:
        """`_current`, with that client's `BrokerLoss`."""
        retired: list[Any] = []
        with self._lock:
            if self._client is None:
                raise KafkaUnavailable(f"the Kafka admin client for {self.bootstrap_servers} is closed")
            why = fresh_client_reason(self._stale_coordinator, self._broker_loss.reported) if coordinator else None
            if why is not None:
                self._stale_coordinator = False
                replaced = self._replace(self._client, why)
                if replaced is not None:
                    retired.append(replaced)
                del replaced  # `retired` holds the last reference, for `_destroy_aside`
            current, loss = self._client, self._broker_loss
        if retired:
            _destroy_aside(retired)
        return current, loss

    def _replace(self, client: Any, why: str) -> Any:
        """Under `_lock`: a new client in place of `client`, unless another thread replaced it already. Returns
        the replaced one (or None), for the caller to drop outside the lock: confluent-kafka destroys a client,
        synchronously, when its last reference goes."""
        if self._client is not client:
            return None
        self._client = self._make_client()
        log.debug("replaced the Kafka admin client: %s", why)
        return client

    def _after_coordinator_request(self, client: Any, moved: bool, unanswered: bool) -> bool:
        """Replace `client` if a request was left unanswered (True: the caller's reference is then its last
        one), or mark it stale if the coordinator moved."""
        with self._lock:
            if unanswered:
                return self._replace(client, "a coordinator request was left unanswered") is not None
            if moved and self._client is client:
                self._stale_coordinator = True
        return False

    def _result(self, client: Any, future: Future[T], what: str, deadline: float | None = None) -> T:
        wait = self.timeout_s if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            return future.result(timeout=wait)
        except TimeoutError as exc:
            raise KafkaTimedOut(
                f"{what}: no answer from Kafka at {self.bootstrap_servers} within {self.timeout_s:g}s"
            ) from exc
        except KafkaException as exc:
            raise unavailable(what, exc) from exc
        finally:
            client.poll(0)  # hand librdkafka's queued log lines to the `logger` (nothing else polls it)

    def _metadata(self, what: str, topic: str | None = None) -> Any:
        client, loss = self._current_with_loss()
        try:
            metadata = client.list_topics(topic=topic, timeout=self.timeout_s)
            loss.listed(frozenset(metadata.brokers))
            return metadata
        except KafkaException as exc:
            raise unavailable(what, exc) from exc
        finally:
            client.poll(0)

    def _coordinator_requests(
        self, send: Callable[[Any], Mapping[K, Future[Any]]], what: Callable[[K], str]
    ) -> dict[K, Any]:
        """Coordinator-routed requests sent at once and awaited with one deadline: per key its result, or the
        `KafkaUnavailable` that answered it. Afterwards a client with a request still pending is replaced now,
        and one answered NOT_COORDINATOR is replaced before the next coordinator request. Not retried at once:
        right after a broker restart a new client often gets the same answer (the coordinator still loading),
        and every caller asks again on its own clock."""
        client = self._current(coordinator=True)
        futures = send(client)
        deadline = time.monotonic() + self.timeout_s
        results: dict[K, Any] = {}
        retired: list[Any] = []
        try:
            for key, future in futures.items():
                try:
                    results[key] = self._result(client, future, what(key), deadline)
                except KafkaUnavailable as exc:
                    results[key] = _without_frames(exc)
        finally:
            moved = any(isinstance(r, NotCoordinator) for r in results.values())
            if self._after_coordinator_request(client, moved, not all(f.done() for f in futures.values())):
                retired.append(client)
        del client
        if retired:
            _destroy_aside(retired)
        return results

    def _coordinator_request(self, send: Callable[[Any], Future[T]], what: str) -> T:
        result = self._coordinator_requests(lambda client: {what: send(client)}, lambda key: key)[what]
        if isinstance(result, KafkaUnavailable):
            raise result
        return result

    # -- groups --------------------------------------------------------------------------------------
    def describe_group(self, group: str) -> KafkaGroup:
        def send(client: Any) -> Future[Any]:
            return client.describe_consumer_groups([group], request_timeout=self._coordinator_timeout_s)[group]

        return group_from_description(group, self._coordinator_request(send, f"describe group {group}"))

    def describe_groups(self, groups: Sequence[str]) -> dict[str, KafkaGroup | KafkaUnavailable]:
        """Every group described in one batch: per group its view, or why it could not be described."""
        if not groups:
            return {}

        def send(client: Any) -> Mapping[str, Future[Any]]:
            return client.describe_consumer_groups(list(groups), request_timeout=self._coordinator_timeout_s)

        results = self._coordinator_requests(send, lambda group: f"describe group {group}")
        return {g: r if isinstance(r, KafkaUnavailable) else group_from_description(g, r) for g, r in results.items()}

    @property
    def _coordinator_timeout_s(self) -> float:
        return self.timeout_s + COORDINATOR_MARGIN_S

    def list_groups(self) -> list[str]:
        client = self._current()
        result = self._result(client, client.list_consumer_groups(request_timeout=self.timeout_s), "list groups")
        return sorted(g.group_id for g in result.valid)

    def committed_offsets(
        self, group: str, partitions: Iterable[TopicPartition], *, keep_reader: bool = True
    ) -> dict[TopicPartition, int]:
        """Kafka-committed next offsets; -1 where the group has none. `keep_reader=False` closes the group's
        reader afterwards (a scan of many groups reads each once)."""
        partitions = list(partitions)
        if not partitions:
            return {}
        if not keep_reader:
            reader = _offsets_reader(self._conf, group)
            try:
                return _read_committed(reader, group, partitions, self.timeout_s, self.bootstrap_servers)
            finally:
                reader.close()
        return _read_committed(self._reader(group), group, partitions, self.timeout_s, self.bootstrap_servers)

    def _reader(self, group: str) -> Consumer:
        with self._lock:
            if self._client is None:
                raise KafkaUnavailable(f"the Kafka admin client for {self.bootstrap_servers} is closed")
            reader = self._readers.get(group)
            if reader is None:
                reader = self._readers[group] = _offsets_reader(self._conf, group)
            return reader

    def group_offsets(self, group: str) -> dict[TopicPartition, int]:
        """Every next offset the group has committed in Kafka, whatever its topics (none: {})."""

        def send(client: Any) -> Future[Any]:
            request = [ConsumerGroupTopicPartitions(group)]
            return client.list_consumer_group_offsets(request, request_timeout=self._coordinator_timeout_s)[group]

        result = self._coordinator_request(send, f"list the committed offsets of group {group}")
        return {_tp(tp): tp.offset for tp in result.topic_partitions or () if tp.error is None and tp.offset >= 0}

    def alter_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Write offsets for an empty group (the broker refuses a group with live members)."""
        tps = [KafkaTopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]

        def send(client: Any) -> Future[Any]:
            request = [ConsumerGroupTopicPartitions(group, tps)]
            return client.alter_consumer_group_offsets(request, request_timeout=self._coordinator_timeout_s)[group]

        result = self._coordinator_request(send, f"alter offsets of group {group}")
        failed = [tp for tp in result.topic_partitions if tp.error is not None]
        if failed:
            raise KafkaUnavailable(f"alter offsets of group {group}: {failed[0].error.str()}", failed[0].error.code())

    # -- topics and offsets --------------------------------------------------------------------------
    def log_end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Log end offsets of the partitions whose leader is a live broker; the others are left out (fresh
        metadata names only live brokers, and refreshes the leaders librdkafka routes by)."""
        wanted = set(partitions)
        if not wanted:
            return {}
        return self._list_offsets(live_led(self._metadata("metadata"), wanted), OffsetSpec.latest(), "log end")

    def earliest_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Log start offsets (the oldest record still kept) of the partitions whose leader is a live broker."""
        wanted = set(partitions)
        if not wanted:
            return {}
        return self._list_offsets(live_led(self._metadata("metadata"), wanted), OffsetSpec.earliest(), "log start")

    def offsets_for_time(self, partitions: Iterable[TopicPartition], timestamp_ms: int) -> dict[TopicPartition, int]:
        """The first offset whose record timestamp is >= `timestamp_ms`; -1 where there is none."""
        wanted = set(partitions)
        if not wanted:
            return {}
        led = live_led(self._metadata("metadata"), wanted)
        return self._list_offsets(led, OffsetSpec.for_timestamp(timestamp_ms), "offset for time")

    def _list_offsets(self, partitions: Iterable[TopicPartition], spec: Any, what: str) -> dict[TopicPartition, int]:
        request = {KafkaTopicPartition(t, p): spec for t, p in partitions}
        if not request:
            return {}
        client = self._current()
        futures = client.list_offsets(request, request_timeout=self.timeout_s)
        deadline = time.monotonic() + self.timeout_s
        return {
            _tp(tp): self._result(client, f, f"{what} of {tp.topic}-{tp.partition}", deadline).offset
            for tp, f in futures.items()
        }

    def partitions(self, topic: str) -> tuple[int, ...] | None:
        """Partition ids of a topic from broker metadata; None when the topic does not exist."""
        md = self._metadata(f"metadata of {topic}", topic)
        tmd = md.topics.get(topic)
        if tmd is None or tmd.error is not None or not tmd.partitions:
            return None
        return tuple(sorted(tmd.partitions))

    def topic_partitions(self) -> dict[str, tuple[int, ...]]:
        """Every topic with its partition ids."""
        md = self._metadata(f"metadata from {self.bootstrap_servers}")
        return {name: tuple(sorted(t.partitions)) for name, t in md.topics.items() if t.error is None}

    def topics(self) -> dict[str, int]:
        """Every topic with its partition count."""
        return {name: len(ids) for name, ids in self.topic_partitions().items()}

    def group_max_size(self) -> int | None:
        """The smallest `group.max.size` among the brokers (the coordinator may be any of them)."""
        md = self._metadata("metadata")
        client = self._current()
        sizes: list[int] = []
        for broker in md.brokers:  # one request per broker: Kafka refuses two BROKER resources in one call
            resource = ConfigResource(ResourceType.BROKER, str(broker))
            future = client.describe_configs([resource], request_timeout=self.timeout_s)[resource]
            entry = self._result(client, future, f"describe configs of broker {broker}").get("group.max.size")
            if entry is not None and entry.value is not None:
                sizes.append(int(entry.value))
        return min(sizes) if sizes else None

    def create_topic(self, topic: str, partitions: int, replication: int = 1) -> None:
        client = self._current()
        futures = client.create_topics(
            [NewTopic(topic, num_partitions=partitions, replication_factor=replication)],
            request_timeout=self.timeout_s,
        )
        self._result(client, futures[topic], f"create topic {topic}")
