"""The record fetcher: one confluent-kafka consumer that fetches the connector's owned partitions by
explicit assignment (never by group subscription) and routes records to the owning thread's stream.

The worker hands it a complete routing table; it is applied between polls with incremental (un)assigns, so
partitions that stay owned keep their position: at once by the worker when no poll is in progress (and the
client knows every partition's topic metadata), else by the thread that polls, after its poll.

"Caller runs": a stream thread with nothing queued polls the client itself (`fetch_for`), keeps its own
chunks and queues the others' chunks, instead of waiting for the fetch thread to be scheduled. The fetch
thread polls only while some stream waits on its queue, and then with a long wait: an idle connector has one
thread blocked in librdkafka and the streams blocked on their queues, not threads waking on timers. A stream
that finds the fetch thread polling waits on its queue at once (the fetch thread serves it) instead of for the
poll lock. Every poll, and the routing of what it returned, happen under `_poll_lock`, so the chunks of one
partition are queued in offset order.

A client that librdkafka has left with no broker to ask (`stranding.reach_of`) is replaced, under the same
lock, by a new one assigned every routed partition at its position.
"""

from __future__ import annotations

import bisect
import logging
import operator
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby, repeat
from typing import Any, Protocol, cast

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError, KafkaException
from confluent_kafka import Message as KafkaMessage
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import TopicMetadata

from migrator.kafka.commit import commit_sync
from migrator.kafka.fetch_health import FetchHealth, FetchHealthTracker, FetchState, health_of, leaderless
from migrator.kafka.stranding import STATISTICS_MS, StrandingWatch, close_aside, reach_of
from migrator.logs import librdkafka_logger
from migrator.protocol.message import Chunk, Message
from migrator.protocol.partition import TopicPartition

log = logging.getLogger(__name__)
POLL_S = 0.02  # when records were already waiting (busy), how long a fetch lets its batch fill
WAIT_S = 0.2  # how long the fetch thread waits for a first record; a routing change may wait for it
# confluent-kafka wakes every 200 ms inside a longer wait anyway (to check for signals), so a longer one would
# save no wake-ups and only delay routing changes.
LEADER_CHECK_S = 5.0
"""How often the metadata is asked whether an owned partition has no leader: librdkafka waits for a leader
silently (its broker's connection errors go to the log, not to `consume`), so no fetch error would say so."""
IDLE_S = 5.0  # the fetch thread sleeps until a stream waits or a table arrives; this only bounds a missed wake-up
FULL_WAIT_S = 0.1  # how often a fetch waiting for room in a stream's full queue looks whether to stop or drop it
BATCH = 500  # records per poll
TOP_UP_BELOW = BATCH // 5  # a busy fetch smaller than this lets its batch fill for `POLL_S`


def tops_up(records: int, *, opened: bool, routing: bool) -> bool:
    """Whether a batch of `records` waits `POLL_S` for company before it goes out (`Fetcher._consume`): a busy
    trickle's does, but not the first batch after partitions were opened (`opened`), which a rebalance's pause
    waits for: the records that piled up while the partitions changed hands come with the first fetch. Nor a
    batch polled while a routing change waits for the poll to end (`routing`): the partitions it opens would
    wait for the company too."""
    return 1 < records < TOP_UP_BELOW and not opened and not routing


LOGICAL_OFFSETS: Mapping[str, int] = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END}
"""librdkafka's `auto.offset.reset` values as the logical offsets an assignment starts at."""
_first = operator.itemgetter(0)
_second = operator.itemgetter(1)
_new_tuple = tuple.__new__


class Destination(Protocol):
    """What the fetcher needs of a stream (`consumer.stream.KafkaStream`): the thread id its records carry, the
    queue it takes chunks from, how many chunks that queue may hold, and how a fetch waits for room beyond (it
    sets `wants_room`; the stream sets `room` when it takes a chunk then). A protocol, so the Kafka adapters
    never import the application's side."""

    thread_id: str
    queue: queue.SimpleQueue[object]
    queue_chunks: int
    room: threading.Event
    wants_room: bool


@dataclass(slots=True)
class Route:
    """Where one partition's records go: its stream, its hand-out epoch, and the next offset expected."""

    stream: Destination
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
            "statistics.interval.ms": STATISTICS_MS,
            "logger": librdkafka_logger(),
        }
        conf.update(properties or {})
        self._conf = conf
        self._stranding = StrandingWatch(conf.get("bootstrap.servers", ""))
        self._consumer = self._new_client()
        self._routes: dict[TopicPartition, Route] = {}
        self._health = FetchHealthTracker()
        self.on_health_change: Callable[[FetchState], None] | None = None
        """Called (under the poll lock: it must only hand the news on) when `fetch_state` changes."""
        self._partition_counts: dict[str, int] = {}  # per topic, as of our last metadata refresh
        self._leaders_checked = time.monotonic()
        self._pending: dict[TopicPartition, Route] | None = None
        self._pending_lock = threading.Lock()
        self._poll_lock = threading.Lock()  # held for every call on the client and the routing of its records
        self._closed = False
        self._poller: threading.Thread | None = None  # the thread holding `_poll_lock`
        self._serving = False  # the fetch thread is polling for the streams that wait on their queues
        self._close_deferred = False
        self._unanswered_commit: threading.Event | None = None  # a `commit` the caller stopped waiting for
        self._waiting = 0  # streams waiting on their queue for the fetch thread
        self._opened = False  # partitions were added at the last routing change and no batch came since
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"fetcher-{group}", daemon=True)

    def commit(self, offsets: Mapping[TopicPartition, int], timeout_s: float) -> set[TopicPartition]:
        """A simple (generation -1) Kafka offset commit, as a legacy connector with `offsets.storage=kafka`
        makes; returns the partitions Kafka accepted.

        It runs under `_poll_lock` like every call on the client, on a helper thread, so the caller waits at most
        `timeout_s`: librdkafka's synchronous commit has no timeout of its own. A commit not answered in time
        counts as refused (the caller keeps the position), and later ones are refused at once until it ends,
        instead of queueing behind it."""
        stuck = self._unanswered_commit
        if stuck is not None and not stuck.is_set():
            log.info("Kafka offset commit refused: an earlier commit is still waiting for Kafka")
            return set()
        if not offsets:
            return set()
        accepted: set[TopicPartition] = set()
        done = threading.Event()

        def run() -> None:
            try:
                with self._poll_lock:
                    if not self._closed:
                        accepted.update(commit_sync(self._consumer, offsets))
            finally:
                done.set()

        threading.Thread(target=run, name="fetcher-commit", daemon=True).start()
        if not done.wait(timeout_s):
            self._unanswered_commit = done
            log.warning("Kafka offset commit through the fetcher not answered within %.1fs", timeout_s)
            return set()
        return set(accepted)

    @property
    def fetch_state(self) -> FetchState:
        """Which owned partitions keep failing to fetch, and why (OK with none)."""
        return self._health.state

    def start(self) -> None:
        self._thread.start()

    def connect(self, topics: Sequence[str], timeout_s: float) -> None:
        """Before the first routing table, for `timeout_s` at most: learn `topics`' partitions and connect to
        their leaders, as the first fetch would have to, so that a joining connector's partitions resume
        without waiting for that (the first table needs no metadata refresh, its first fetch no new
        connection). Read-only; stops once a table was routed; a failure is left for the first fetch."""
        deadline = time.monotonic() + timeout_s
        connected: set[int] = set()  # leaders asked already
        for topic in topics:
            with self._poll_lock:
                if self._closed or self._routes or self._pending is not None or time.monotonic() >= deadline:
                    return
                try:
                    self._connect_to_leaders(topic, deadline, connected)
                except KafkaException as exc:
                    log.debug("connecting the fetcher to the leaders of %s failed: %s", topic, exc)

    def _connect_to_leaders(self, topic: str, deadline: float, connected: set[int]) -> None:
        """Under `_poll_lock`: `topic`'s metadata, then a ListOffsets request (which goes to a partition's
        leader) for one partition of each leader not `connected` yet."""
        found = self._topic_metadata(topic, deadline - time.monotonic())
        if found is None:
            return
        for partition, meta in sorted(found.partitions.items()):
            if meta.leader >= 0 and meta.leader not in connected and time.monotonic() < deadline:
                connected.add(meta.leader)
                self._consumer.get_watermark_offsets(
                    KafkaTopicPartition(topic, partition), timeout=deadline - time.monotonic(), cached=False
                )

    def route(self, routes: Mapping[TopicPartition, Route]) -> None:
        """Replace the routing table: at once when no thread polls, else by the polling thread after its poll.

        A table that needs a metadata refresh first (up to seconds, which the worker must not wait) is always
        left to the fetch thread. The client is never changed during a poll: a poll's records are routed by
        the table it polled under, so a re-seeked partition never takes records fetched before its re-seek."""
        with self._pending_lock:
            self._pending = dict(routes)
        if self._poll_lock.acquire(blocking=False):
            try:
                pending = self._pending
                if pending is not None and not self._closed and not self._unknown(self._added(pending)):
                    self._apply_pending()
            except Exception:  # the fetch thread tries again, and reports it
                log.warning("routing change left to the fetch thread", exc_info=True)
            finally:
                self._poll_lock.release()
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        if self._poller is threading.current_thread():
            # A signal handler (`shutdown()`) interrupted this very thread inside its poll: waiting for the
            # poll lock would wait for ourselves. The poll returns once the handler does; close then.
            self._close_deferred = True
            return
        with self._poll_lock:  # a stream thread may be polling: wait for it
            self._close_client()

    def _new_client(self) -> Consumer:
        client = self._stranding.new_client()
        return Consumer({**self._conf, "stats_cb": lambda stats: self._on_statistics(client, stats)})

    def _on_statistics(self, client: int, statistics: str) -> None:
        """On the polling thread (under `_poll_lock`), from inside a `consume` of client number `client`. Only
        while partitions are routed: an idle client connects to no broker, and needs none."""
        if self._routes:
            self._stranding.observe(client, reach_of(statistics))
        else:
            self._stranding.reset()

    def _replace_stranded_client(self) -> None:
        """Under `_poll_lock`: a client neither connected nor trying while a broker answers may never fetch again
        (`stranding.reach_of`), so a new one takes over every routed partition at the route's next offset,
        where the old one stopped handing records over (nothing is skipped, nothing handed out twice). The old
        one is closed on a thread of its own: closing a client without a broker can wait for its timeouts."""
        log.warning(
            "the Kafka fetcher's client has had no broker connection and made no attempt for %.0fs while a "
            "bootstrap server answers (librdkafka may have dropped its brokers for good): replacing it; %d owned "
            "partitions resume at their positions",
            self._stranding.stranded_for(),
            len(self._routes),
        )
        old, self._consumer = self._consumer, self._new_client()
        self._partition_counts = {}
        if self._routes:
            self._consumer.incremental_assign(
                [KafkaTopicPartition(tp.topic, tp.partition, r.next_offset) for tp, r in self._routes.items()]
            )
        close_aside(old, "fetcher-close-stranded")

    def _close_client(self) -> None:
        """Under `_poll_lock`."""
        if not self._closed:
            self._closed = True
            self._consumer.close()

    # -- a stream thread fetching for itself (caller runs) -----------------------------------------------
    def fetch_for(self, stream: Destination, timeout_s: float) -> list[Chunk] | None:
        """Poll once on the calling stream's thread: return its chunks, queue the others'.

        None when this thread cannot poll now (another thread polled for longer than `timeout_s`, a routing
        change is pending, nothing is routed, the fetcher is closing): the stream then waits on its queue,
        announced with `waiting`. An empty list when the poll returned nothing for it, or its queue got a
        chunk meanwhile.
        """
        # Wait for another stream's poll in progress (it ends within `timeout_s`), not for the fetch thread's:
        # that one serves this stream's queue meanwhile.
        if self._serving or self._pending is not None or self._stop.is_set():
            return None
        if not self._poll_lock.acquire(timeout=timeout_s):
            return None
        self._poller = threading.current_thread()
        try:
            if self._closed or self._pending is not None or not self._routes:
                return None
            if not stream.queue.empty():  # queued under this lock, so older than anything polled now
                return []
            try:
                batch = self._consume(timeout_s)
            except Exception:  # the client is closing or broken; the fetch thread logs it
                return None
            return self._dispatch(batch, stream) if batch else []
        finally:
            if self._close_deferred:
                self._close_client()
            self._poller = None
            self._poll_lock.release()

    def waiting(self, delta: int) -> None:
        """A stream starts (+1) or stops (-1) waiting on its queue; the fetch thread polls while any waits."""
        with self._pending_lock:
            self._waiting += delta
        if delta > 0 and not self._serving:  # a serving fetch thread looks at `_waiting` before it sleeps
            self._wake.set()

    # -- the fetch thread ----------------------------------------------------------------------------
    def _added(self, routes: Mapping[TopicPartition, Route]) -> list[TopicPartition]:
        """Partitions new in `routes`, or re-opened at a new epoch (to be re-seeked)."""
        return [tp for tp, r in routes.items() if tp not in self._routes or self._routes[tp].epoch != r.epoch]

    def _unknown(self, added: list[TopicPartition]) -> list[str]:
        """Topics of `added` with a partition beyond what the client's metadata had at our last refresh."""
        return sorted({tp.topic for tp in added if tp.partition >= self._partition_counts.get(tp.topic, 0)})

    def _apply_pending(self) -> None:
        """Under `_poll_lock`."""
        with self._pending_lock:
            pending, self._pending = self._pending, None
        if pending is None:
            return
        removed = [tp for tp in self._routes if tp not in pending]
        added = self._added(pending)
        if removed or added:
            # a partition re-opened at a new epoch is re-seeked: unassign then assign at its fetch offset
            readd = [tp for tp in added if tp in self._routes]
            gone = removed + readd
            if gone:
                self._consumer.incremental_unassign([KafkaTopicPartition(t, p) for t, p in gone])
            if added:
                self._refresh_metadata(added)
                self._consumer.incremental_assign([KafkaTopicPartition(*tp, pending[tp].next_offset) for tp in added])
        # a kept partition keeps its route (and position); a new or re-opened one starts where the worker says
        self._routes = {tp: (r if tp in added else self._routes[tp]) for tp, r in pending.items()}
        self._opened = self._opened or bool(added)

    def _check_leaders(self) -> None:
        """Under `_poll_lock`: an owned partition without a leader (its only replicas' brokers are down) counts
        as unreachable, as a fetch error would."""
        self._leaders_checked = time.monotonic()
        leaders: dict[TopicPartition, int] = {}
        for topic in {tp.topic for tp in self._routes}:
            try:
                found = self._consumer.list_topics(topic=topic, timeout=0.5).topics.get(topic)
            except Exception:  # no broker answers: the fetch's own errors say so
                continue
            if found is not None and found.error is None:
                leaders.update({TopicPartition(topic, p): m.leader for p, m in found.partitions.items()})
        failures = leaderless(leaders, self._routes.keys())
        if failures or self._health.failing:
            self._note_health(failures, [])

    def _refresh_metadata(self, added: list[TopicPartition]) -> None:
        """Partitions added to a topic are unknown to the client's cached metadata until its next refresh
        (minutes away); ask now so that an assignment of a new partition starts fetching at once. Only
        for a topic not seen yet or a partition beyond what it had: a rebalance should not wait for it."""
        for topic in self._unknown(added):
            try:
                self._topic_metadata(topic, 5.0)
            except Exception:  # the fetch loop retries; an assign of an unknown partition waits, it does not fail
                log.warning("metadata refresh of %s failed", topic, exc_info=True)

    def _topic_metadata(self, topic: str, timeout_s: float) -> TopicMetadata | None:
        """Under `_poll_lock`: `topic`'s metadata from the cluster (None when it has none for the topic), its
        partition count noted for `_unknown`."""
        found = self._consumer.list_topics(topic=topic, timeout=timeout_s).topics.get(topic)
        if found is None or found.error is not None:
            return None
        self._partition_counts[topic] = len(found.partitions)
        return found

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._wake.is_set():
                self._wake.clear()  # before looking: a wake-up from now on is not lost
            if self._pending is None and (not self._waiting or not self._routes):
                self._wake.wait(IDLE_S)  # streams fetch for themselves; nothing to do for them here
                continue
            if not self._poll_lock.acquire(timeout=IDLE_S):  # a stream's poll ends within its own short wait
                continue
            try:
                if self._closed:
                    return
                self._apply_pending()
                self._serve()
            finally:
                self._serving = False
                self._poll_lock.release()

    def _serve(self) -> None:
        """One long poll for the streams waiting on their queues (under `_poll_lock`)."""
        if not self._routes or not self._waiting:
            return
        self._serving = True
        try:
            batch = self._consume(WAIT_S)
        except Exception:  # the client is closing or broken; the worker decides what happens next
            log.exception("fetch failed")
            self._stop.wait(0.5)
            return
        if batch:
            self._dispatch(batch)

    def _consume(self, wait_s: float) -> list[Any]:
        """A batch (under `_poll_lock`): a first record within `wait_s` and whatever was fetched with it; when
        more than that was waiting but under `TOP_UP_BELOW` records (busy), also what arrives within `POLL_S`.

        librdkafka's batch consume returns only when the batch is full or its timeout is over, so one wait
        serves two purposes badly: short, an idle connector wakes every few milliseconds for nothing; long,
        records wait for it. A first record ends the long wait at once; idle, it goes out without waiting
        `POLL_S` for company that will not come (and each call on the client hands the GIL over once more).
        Busy, the thread sleeps `POLL_S` and then takes what arrived without waiting: a wait inside the client
        would wake it at every fetch response (several times a `POLL_S` at a few thousand records a second),
        a sleep once. Records that arrive beyond the batch are taken at once by the next call, and a large first
        batch (a backlog, a high rate) is not held back at all, so this bounds no rate. Nor is the first batch
        after partitions were opened, or one a routing change waits for (`tops_up`).
        """
        batch = self._consumer.consume(num_messages=1, timeout=wait_s)
        if not batch and self._stranding.replace_due():
            self._replace_stranded_client()
        if time.monotonic() - self._leaders_checked > LEADER_CHECK_S:
            self._check_leaders()
        if batch:
            batch += self._consumer.consume(num_messages=BATCH - 1, timeout=0)
            if tops_up(len(batch), opened=self._opened, routing=self._pending is not None):
                time.sleep(POLL_S)
                batch += self._consumer.consume(num_messages=BATCH - len(batch), timeout=0)
            self._opened = False
        return batch

    def _dispatch(self, batch: list[Any], caller: Destination | None = None) -> list[Chunk]:
        """Group a batch into one chunk per partition; queue each on its thread's stream, or return those of
        `caller` (the stream polling for itself: its own queue may be full, and only it drains it).

        This is the per-record cost of the connector, so every per-record step runs in C (`map`, `zip`,
        `groupby`): a batch holds runs of one partition, and Python runs once per run.
        """
        errors = list(map(KafkaMessage.error, batch))
        failures: dict[TopicPartition | None, FetchHealth] = {}
        if not all(map(operator.is_, errors, repeat(None))):  # not `count(None)`: a KafkaError's == None raises
            failures = self._failures(batch, errors)
            batch = [raw for raw, error in zip(batch, errors, strict=True) if error is None]
        if failures or self._health.failing:
            self._note_health(failures, batch)
        routes = self._routes
        chunks: dict[tuple[str, int], tuple[Route, Chunk]] = {}
        keys = zip(map(KafkaMessage.topic, batch), map(KafkaMessage.partition, batch), strict=True)
        for key, run_pairs in groupby(zip(keys, batch, strict=True), _first):
            route = routes.get(key)
            if route is None:
                continue
            run = list(map(_second, run_pairs))
            messages = self._messages(key, run, route)
            if not messages:
                continue
            entry = chunks.get(key)
            if entry is None:
                chunks[key] = (route, Chunk(TopicPartition(*key), route.epoch, messages))
            else:
                entry[1].messages.extend(messages)
        own: list[Chunk] = []
        for route, chunk in chunks.values():
            if route.stream is caller:
                own.append(chunk)
            else:
                self._put(route, chunk)
        return own

    @staticmethod
    def _failures(batch: list[Any], errors: list[Any]) -> dict[TopicPartition | None, FetchHealth]:
        """Each failed partition's health (None: an error of the whole client), each error logged."""
        failures: dict[TopicPartition | None, FetchHealth] = {}
        for raw, error in zip(batch, errors, strict=True):
            if error is None or error.code() == KafkaError._PARTITION_EOF:
                continue
            log.warning("fetch error: %s", error)
            topic, partition = raw.topic(), raw.partition()
            key = TopicPartition(topic, partition) if topic and partition is not None and partition >= 0 else None
            failures[key] = health_of(error.code())
        return failures

    def _note_health(self, failures: Mapping[TopicPartition | None, FetchHealth], records: list[Any]) -> None:
        """Log loudly when the owned partitions that cannot be fetched change (once per change)."""
        fetched = {TopicPartition(raw.topic(), raw.partition()) for raw in records}
        changed = self._health.observe(failures, fetched, self._routes.keys())
        if changed is None:
            return
        if self.on_health_change is not None:
            self.on_health_change(changed)
        if changed.health is FetchHealth.OK:
            log.warning("fetching again: every owned partition returns records or waits for them")
        else:
            log.error(
                "this member owns partitions it cannot fetch (%s); their records wait until it can or until "
                "they are reassigned",
                changed.describe(),
            )

    @staticmethod
    def _messages(key: tuple[str, int], run: list[Any], route: Route) -> list[Message]:
        """The `Message`s of one partition's run, from `route.next_offset` on (skipping records from before a
        re-seek), advancing it."""
        offsets = cast(list[int], list(map(KafkaMessage.offset, run)))  # a record (not an error) has one
        if all(map(operator.lt, offsets, offsets[1:])):  # ascending, as fetched: skip a prefix
            cut = bisect.bisect_left(offsets, route.next_offset)
            if cut:
                run, offsets = run[cut:], offsets[cut:]
        else:  # not seen in practice: keep each record above the last one kept
            keep = []
            next_offset = route.next_offset
            for i, offset in enumerate(offsets):
                if offset >= next_offset:
                    keep.append(i)
                    next_offset = offset + 1
            run, offsets = [run[i] for i in keep], [offsets[i] for i in keep]
        if not run:
            return []
        route.next_offset = offsets[-1] + 1
        n = len(run)
        stamps = list(map(KafkaMessage.timestamp, run))  # (type, timestamp); -1 when the type says none
        if 0 in map(_first, stamps):
            timestamps: Any = [ts if ts_type else -1 for ts_type, ts in stamps]
        else:
            timestamps = map(_second, stamps)
        keys, values = map(KafkaMessage.key, run), map(KafkaMessage.value, run)
        fields = zip(repeat(key[0], n), repeat(key[1], n), offsets, keys, values, timestamps,
                     repeat(route.stream.thread_id, n), strict=True)  # fmt: skip
        return list(map(_new_tuple, repeat(Message, n), fields))

    def _put(self, route: Route, chunk: Chunk) -> None:
        """Queue `chunk` on its stream once its queue has room (a `SimpleQueue`: putting, waiting and taking run
        no Python code, which is most of what an idle record costs otherwise; its bound is kept here)."""
        stream = route.stream
        while stream.queue.qsize() >= stream.queue_chunks:
            pending = self._pending
            if pending is not None and (chunk.tp not in pending or pending[chunk.tp].epoch != chunk.epoch):
                return  # the partition is being taken away; the stream would drop it anyway
            stream.room.clear()
            stream.wants_room = True
            if stream.queue.qsize() < stream.queue_chunks:  # taken before it could see `wants_room`
                break
            stream.room.wait(FULL_WAIT_S)
            if self._stop.is_set():
                return
        stream.queue.put(chunk)
