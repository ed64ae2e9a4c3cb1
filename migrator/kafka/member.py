"""The embedded Kafka group member of a bridge (KIP-125's EKC).

It only takes part in Kafka group coordination: it subscribes, pauses every partition it is given and
never hands out a record. Its rebalance callbacks become events for the connector's worker; the revoke
callback blocks until the worker has released, so plain Kafka consumers that join later get a partition
only after the bridge stopped processing it. It also commits offsets with its generation and member id,
which the broker demands for a group with live members (CONTRACT §4).

confluent-kafka blocks calls from other threads while a rebalance callback runs, and our revoke callback
waits for the worker, which may need to commit. So every call on the client runs on the poll thread: other
threads queue it, and the poll thread serves the queue between polls and while it waits in a callback.
(confluent-kafka lets one thread at a time into a client, the poll thread for the whole of its wait, and
nothing wakes a waiting `poll()`: a call from another thread would wait as long anyway.) So that a queued call
does not wait a whole poll when it need not, the poll thread waits in short slices right after serving one
(a commit's successor, a leave, follows within milliseconds), once the connector is shutting down, and while
the connector's streams take batches of records several times as often as those slices come: the application's
own `commit_offsets()` may come at any moment then (on SIGTERM, before its shutdown, typically), and the poll
thread's wake-ups stay a small part of the streams'. A bridge taking a trickle of records waits whole polls.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from migrator.kafka.commit import CommitWithheld, member_commit_sync
from migrator.kafka.group_errors import CommitBar, GroupFault, commit_bar, group_fault_of
from migrator.kafka.stranding import STATISTICS_MS, StrandingWatch, close_aside, statistics_of
from migrator.logs import librdkafka_logger
from migrator.protocol.events import Event, KafkaAssigned, KafkaLost, KafkaRevoked
from migrator.protocol.kafka import RebalanceProtocol, rebalance_protocol
from migrator.protocol.partition import TopicPartition

log = logging.getLogger(__name__)

# Eager protocols that plain confluent-kafka (range,roundrobin) and Java (range,cooperative-sticky)
# consumers share: the group agrees on range. `cooperative-sticky` alone makes the member cooperative.
DEFAULT_ASSIGNMENT_STRATEGY = "range,roundrobin"
REVOKE_WAIT_S = 240.0  # below the default max.poll.interval.ms, so the broker does not evict us meanwhile
SERVE_S = 0.05  # how often the poll thread serves queued calls while it waits in a revoke callback
CALL_WAIT_S = 0.2  # the poll thread waits in poll at most this long, then serves queued calls
# Rebalance callbacks end a poll's wait at once, so this bounds only a call queued outside one (a commit):
# shorter, an idle bridge wakes for nothing (confluent-kafka wakes a plain consumer's long poll every 200 ms
# anyway, to check for signals, so this costs no more wake-ups than that).
FIRST_SLICE_S = 0.005  # after serving a call the poll thread waits this long, then twice as long, up to the above
LEAVING_SLICE_S = 0.005  # its wait once the connector is shutting down: the leave is served this late at most
BUSY_SLICE_S = 0.05  # its longest wait while the streams are busy: an application's commit waits this at most
BUSY_TAKES_PER_SLICE = 5  # busy: the streams take at least this many batches per such slice (100 a second)
BUSY_WINDOW_S = 1.0  # how often the poll thread measures how fast the streams take batches
T = TypeVar("T")


def streams_busy(takes: int, seconds: float) -> bool:
    """Whether the streams took batches `BUSY_TAKES_PER_SLICE` times as often as `BUSY_SLICE_S` slices would
    wake the poll thread: the busy slices' wake-ups stay a fifth of the streams' at most."""
    return takes * BUSY_SLICE_S >= seconds * BUSY_TAKES_PER_SLICE


def poll_wait(slice_s: float, idle_s: float, *, leaving: bool, busy: bool) -> tuple[float, float]:
    """The poll thread's next wait in poll and the slice after it: the slice after a served call doubles back
    to `idle_s`; a shutting-down connector's thread waits `LEAVING_SLICE_S`, one whose streams are busy
    (`streams_busy`) `BUSY_SLICE_S` at most (see the module docstring)."""
    if leaving:
        return min(LEAVING_SLICE_S, idle_s), slice_s
    wait, after = slice_s, min(slice_s * 2, idle_s)
    return (min(wait, BUSY_SLICE_S) if busy else wait), after


class _Unanswered(TimeoutError):
    """A queued call not answered in time; `future` is the call's, still queued or running."""

    def __init__(self, future: Future[Any]) -> None:
        super().__init__("the poll thread did not answer in time")
        self.future = future


class EmbeddedMember:
    def __init__(
        self,
        properties: Mapping[str, str],
        poll_interval_ms: int,
        post: Callable[[Event], None],
    ) -> None:
        conf: dict[str, Any] = {
            "partition.assignment.strategy": DEFAULT_ASSIGNMENT_STRATEGY,
            "enable.auto.offset.store": False,
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 1000,
            "statistics.interval.ms": STATISTICS_MS,
            "logger": librdkafka_logger(),
        }
        conf.update(properties)
        conf["enable.auto.commit"] = False
        self._post = post
        self._wait_s = min(poll_interval_ms / 1000.0, CALL_WAIT_S)  # the longest a queued call waits
        self._conf = conf
        self._strategy = str(conf["partition.assignment.strategy"])
        self.protocol = rebalance_protocol(self._strategy)
        self._cooperative = self.protocol is RebalanceProtocol.COOPERATIVE
        """Assignments and revocations name only the partitions that move (KIP-429)."""
        self._instance_id = str(conf.get("group.instance.id") or "")
        """A static member's (KIP-345) group.instance.id; empty for a dynamic member."""
        self._lost = False  # the assignment was revoked as lost, and no new one came since: no generation
        self._fenced = False  # another consumer joined with our group.instance.id; the client is dead
        self._coordinator_up = True
        """Whether the group coordinator is reachable as far as the poll thread knows: False from a report of no
        broker, or statistics saying otherwise, until statistics show it up again or an assignment comes. Only
        a static member with statistics on watches it: without them, nothing would show an outage shorter than
        the session over."""
        self._watches_coordinator = bool(self._instance_id) and int(conf["statistics.interval.ms"]) > 0
        self._stranding = StrandingWatch(conf.get("bootstrap.servers", ""))
        self._consumer = self._new_client()
        self._topics: Sequence[str] | None = None
        self._subscribed: tuple[str, ...] = ()
        self._closing = threading.Event()
        self.joined = threading.Event()  # set at the first assignment
        self._assignment: tuple[TopicPartition, ...] = ()
        self._thread = threading.Thread(target=self._run, name=f"embedded-{conf.get('client.id')}", daemon=True)
        self._client_id = str(conf.get("client.id", ""))
        self._calls: queue.Queue[tuple[Callable[[], Any], Future[Any]]] = queue.Queue()
        self._member_id = ""
        self._assignments = 0
        self._refused = False  # the broker refused our JoinGroup (no common assignor) since the last assignment
        self._unanswered_commit: Future[set[TopicPartition]] | None = None
        """A commit whose caller stopped waiting while the poll thread was in it (see `commit`)."""
        self._slice_s = self._wait_s  # the poll thread's next wait in poll
        self._leaving_soon = threading.Event()
        self._takes = 0  # batches the streams took (`handing_out`); a lost increment only blurs a rate
        self._busy = False  # the poll thread's: whether the streams took batches fast (`streams_busy`)
        self._window = (0.0, 0)  # the poll thread's: when its window of the take rate began, and the takes then
        self.full_waits = 0
        """How many times the poll thread waited a whole `poll.interval.ms` (at most `CALL_WAIT_S`) in poll:
        the idle rhythm, which a queued call may wait for."""
        self.short_waits = 0
        """How many times it waited only a slice of that (after a served call, or with the connector leaving)."""

    @property
    def client_id(self) -> str:
        return self._client_id

    @property
    def alive(self) -> bool:
        """Whether the poll thread still runs (after `close()` it must not: its client would linger)."""
        return self._thread.is_alive()

    @property
    def assignment(self) -> tuple[TopicPartition, ...]:
        return self._assignment

    @property
    def assignments(self) -> int:
        """How many assignments the group has handed this member since it started. Every Kafka rebalance of
        the group reaches every member as one more (under the cooperative protocol, maybe of nothing new;
        a cooperative rebalance that revokes takes two); a static member
        that rejoins after a restart gets its previous assignment back as its first, and the other members'
        counts stay where they were."""
        return self._assignments

    def member_id(self) -> str:
        """The member id of the last assignment (read on the poll thread, so it never blocks)."""
        return self._member_id

    def start(self, topics: Sequence[str]) -> None:
        self._topics = tuple(sorted(topics))
        self._thread.start()

    def subscribe(self, topics: Sequence[str]) -> None:
        """Change the subscription (wildcard topics appeared or vanished); applied by the poll thread."""
        self._topics = tuple(sorted(topics))

    def commit(self, offsets: Mapping[TopicPartition, int], timeout_s: float) -> set[TopicPartition]:
        """Commit synchronously with the member's generation; returns the partitions Kafka accepted.

        A commit not answered within `timeout_s` counts as refused (the caller keeps the position): the worker
        that waits here must go on answering ZooKeeper and mode events. librdkafka's synchronous commit has no
        timeout of its own and retries while the group's coordinator loads, so the poll thread may stay in it;
        until it is out, later commits are refused at once instead of queueing behind it (each would cost the
        caller its whole wait, and could land after a newer one). `GenerationMoved` when Kafka refused it for
        the member's generation."""
        stuck = self._unanswered_commit
        if stuck is not None and not stuck.done():
            log.info("Kafka offset commit refused: an earlier commit is still waiting for Kafka")
            return set()
        self._unanswered_commit = None
        try:
            return self._call(lambda: self._commit_now(offsets), timeout_s)
        except _Unanswered as exc:
            if not exc.future.cancel():  # the poll thread is in it: it may end later, or never
                self._unanswered_commit = exc.future
            log.warning("Kafka offset commit through the embedded member not answered within %.1fs", timeout_s)
            return set()
        except TimeoutError:  # the member is leaving the group
            return set()

    def _commit_now(self, offsets: Mapping[TopicPartition, int]) -> set[TopicPartition]:
        """On the poll thread: the commit, unless `commit_bar` withholds it (`CommitWithheld`). A static
        member's commit that librdkafka would hold, or send with a reset member id, gets the client fenced."""
        static = bool(self._instance_id)
        generation = not (self._lost or self._fenced or (static and not self._consumer.memberid()))
        bar = commit_bar(generation=generation, static=static, coordinator_up=self._coordinator_up)
        if bar is not None:
            code = KafkaError._WAIT_COORD if bar is CommitBar.NO_COORDINATOR else KafkaError._ASSIGNMENT_LOST
            raise CommitWithheld(code, bar.value)
        return member_commit_sync(self._consumer, offsets)

    def _call(self, fn: Callable[[], T], timeout_s: float) -> T:
        if threading.current_thread() is self._thread or not self._thread.is_alive():
            return fn()
        if self._closing.is_set():  # the poll thread serves nothing more; the group no longer knows us
            raise TimeoutError("the embedded member is leaving the group")
        future: Future[T] = Future()
        self._calls.put((fn, future))
        try:
            return future.result(timeout=timeout_s)
        except TimeoutError as exc:
            raise _Unanswered(future) from exc

    def _serve(self, wait_s: float = 0.0) -> None:
        """Run queued calls on the poll thread; wait up to `wait_s` for the first one."""
        try:
            fn, future = self._calls.get(timeout=wait_s) if wait_s > 0 else self._calls.get_nowait()
        except queue.Empty:
            return
        self._slice_s = min(FIRST_SLICE_S, self._wait_s)  # another call is likely to follow this one
        while True:
            if future.set_running_or_notify_cancel():  # False: its caller stopped waiting before it started
                try:
                    future.set_result(fn())
                except Exception as exc:  # handed to the caller
                    future.set_exception(exc)
            try:
                fn, future = self._calls.get_nowait()
            except queue.Empty:
                return

    def handing_out(self) -> None:
        """A stream took a batch of records. While the streams are busy (`streams_busy`, measured over
        `BUSY_WINDOW_S`) the poll thread waits `BUSY_SLICE_S` at most, so a commit the application may ask for
        meanwhile is served soon. Cheap enough for every batch."""
        self._takes += 1

    def expect_leave(self) -> None:
        """The connector is shutting down: from the next poll on, the poll thread waits in short slices, so the
        shutdown's commit and leave are served at once rather than after a whole poll. Costs nothing at idle."""
        self._leaving_soon.set()

    def leave(self) -> None:
        """Start leaving the group without waiting: the poll thread closes the client, which sends LeaveGroup.
        Called by a shutting-down worker once nothing more is processed or committed, so the group's
        rebalance overlaps the release of the owner nodes. Revoke callbacks from here on return at once."""
        self._closing.set()
        self._calls.put((lambda: None, Future()))  # wake the poll thread if it waits in a revoke callback

    def wait_left(self, timeout_s: float) -> bool:
        """Whether the client has closed (LeaveGroup sent) within `timeout_s`."""
        if self._never_started():
            return True  # never joined
        self._thread.join(timeout=timeout_s)
        return not self._thread.is_alive()

    def close(self) -> None:
        """Leave the group. The worker has released everything already, so revoke callbacks return at once.

        A member never started closes its client on a thread of its own (it never joined, but a close can wait
        for the client's timeouts): left to the garbage collector, the client would be destroyed on whatever
        thread happens to allocate, maybe one holding a lock its destruction needs."""
        self.leave()
        if self._never_started():
            close_aside(self._consumer, "embedded-close-unstarted")
        elif self._thread.is_alive():
            self._thread.join(timeout=30)

    def _never_started(self) -> bool:
        return self._thread.ident is None

    # -- the poll thread -----------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._closing.is_set():
                if self._topics is not None and self._topics != self._subscribed:
                    self._subscribed = tuple(self._topics)
                    if not self._subscribed:  # librdkafka refuses an empty subscription: leave the group
                        self._consumer.unsubscribe()
                    else:
                        self._consumer.subscribe(
                            list(self._subscribed),
                            on_assign=self._on_assign,
                            on_revoke=self._on_revoke,
                            on_lost=self._on_lost,
                        )
                self._serve()
                # Wait in poll, not between polls: librdkafka hands a rebalance to its callback only inside
                # poll, and the group's JoinGroup waits for our revoke callback, so a member polled every
                # `poll.interval.ms` kept the whole group waiting up to that long twice per rebalance (and
                # put its heartbeats out of phase with the other members', a further wait at the next one).
                msg = self._consumer.poll(self._next_wait())
                if msg is None:
                    self._replace_if_stranded()
                elif (error := msg.error()) is not None:
                    self._on_error(error)
                else:
                    # paused partitions deliver nothing; a record here means a pause raced an assign
                    topic, partition = msg.topic(), msg.partition()
                    log.warning("embedded member received a record of %s-%s; pausing", topic, partition)
                    if topic is not None and partition is not None:  # always, for a record
                        self._consumer.pause([KafkaTopicPartition(topic, partition)])
        except Exception:
            log.exception("embedded member poll loop failed")
            self._post(KafkaLost("embedded member poll loop failed"))
        finally:
            try:
                self._consumer.close()
            except (KafkaException, RuntimeError):
                log.debug("embedded member close failed", exc_info=True)

    def _next_wait(self) -> float:
        """How long the next poll waits: a short slice while a call is likely soon (see the module docstring),
        doubling back to the idle wait, which costs a few wake-ups per served call."""
        now, (since, takes_then) = time.monotonic(), self._window
        if now - since >= BUSY_WINDOW_S:
            takes = self._takes
            self._busy, self._window = streams_busy(takes - takes_then, now - since), (now, takes)
        wait, self._slice_s = poll_wait(
            self._slice_s, self._wait_s, leaving=self._leaving_soon.is_set(), busy=self._busy
        )
        if wait >= self._wait_s:
            self.full_waits += 1
        else:
            self.short_waits += 1
        return wait

    def _new_client(self) -> Consumer:
        """A client whose callbacks count only while it is the member's: a replaced one closes on another thread."""
        client = self._stranding.new_client()

        def on_error(error: KafkaError) -> None:
            if self._stranding.is_current(client):
                self._on_error(error)

        return Consumer(
            {**self._conf, "error_cb": on_error, "stats_cb": lambda stats: self._on_statistics(client, stats)}
        )

    def _on_statistics(self, client: int, statistics: str) -> None:
        """Statistics client number `client` reported (on the poll thread): whether it is stranded, and for a
        static member whether its coordinator is up (`commit_bar`)."""
        report = statistics_of(statistics)
        self._stranding.observe(client, report.reach)
        if self._watches_coordinator and self._stranding.is_current(client):
            self._coordinator_up = report.coordinator_up is not False

    def _replace_if_stranded(self) -> None:
        """On the poll thread: a client neither connected nor trying while a broker answers never joins the group
        again (`stranding.reach_of`), so a new client joins in its place. Whatever the old one still holds is
        revoked as lost first (librdkafka has mostly done so at its session timeout already)."""
        if not self._stranding.replace_due():
            return
        log.warning(
            "the embedded member's client has had no broker connection and made no attempt for %.0fs while a "
            "bootstrap server answers (librdkafka may have dropped its brokers for good): a new client joins the "
            "group",
            self._stranding.stranded_for(),
        )
        if self._assignment:
            self._on_revoke(self._consumer, [], lost=True)
        old, self._consumer = self._consumer, self._new_client()
        self._subscribed = ()  # the loop subscribes the new client
        close_aside(old, "embedded-close-stranded")

    def _on_assign(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        if consumer is not self._consumer:  # a replaced client, closing
            return
        # Assign explicitly so confluent-kafka does not assign again after we return (which would undo the
        # pause), then pause what was added: the embedded member never fetches. A cooperative assignment is
        # incremental: `partitions` are the new ones, and the ones kept stay assigned and paused.
        added = {TopicPartition(p.topic, p.partition) for p in partitions}
        if self._cooperative:
            consumer.incremental_assign(partitions)
            added |= set(self._assignment)
        else:
            consumer.assign(partitions)
        consumer.pause(partitions)
        self._assignment = tuple(sorted(added))
        self._member_id = consumer.memberid() or ""
        self._lost = False
        self._coordinator_up = True  # it has just answered our SyncGroup
        self._assignments += 1
        self._refused = False
        # one line per Kafka rebalance: when the group formed is what an outage's timeline needs
        log.info("embedded member assigned %d partitions (assignment %d, %d new)", len(self._assignment),
                 self._assignments, len(partitions))  # fmt: skip
        self._post(KafkaAssigned(self._assignment))
        self.joined.set()

    def _on_revoke(self, consumer: Consumer, partitions: list[KafkaTopicPartition], lost: bool = False) -> None:
        if consumer is not self._consumer:  # a replaced client, closing
            return
        revoked = None
        if not lost and self._cooperative:  # only these go; the rest stays assigned (and untouched)
            revoked = frozenset(TopicPartition(p.topic, p.partition) for p in partitions)
        self._assignment = () if revoked is None else tuple(tp for tp in self._assignment if tp not in revoked)
        self._lost = self._lost or lost
        if self._closing.is_set():
            return
        event = KafkaRevoked(lost=lost, partitions=revoked)
        log.debug("embedded member revoked %d partitions%s", len(partitions), " (lost)" if lost else "")
        if lost and self._instance_id:
            # While this callback runs, librdkafka heartbeats with the member id it has just reset, which the
            # broker answers FENCED_INSTANCE_ID for a static member once the coordinator is back: fatal to the
            # client. A lost assignment is the group's already, so nothing in Kafka waits for the release.
            self._post(event)
            return
        # Wake the wait below the moment the worker is done: the group's JoinGroup waits for this callback.
        event.done.add_done_callback(lambda _done: self._calls.put((lambda: None, Future())))
        self._post(event)
        started = time.monotonic()
        while not event.done.done() and not self._closing.is_set():  # a closing connector's worker is gone
            if time.monotonic() - started > REVOKE_WAIT_S:
                log.error("worker did not release within %.0fs of a Kafka revoke", REVOKE_WAIT_S)
                return
            self._serve(SERVE_S)  # the worker's release commits through us

    def _on_lost(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        self._on_revoke(consumer, partitions, lost=True)

    def _on_error(self, error: KafkaError) -> None:
        fault = group_fault_of(error.code(), static=bool(self._instance_id))
        if fault is GroupFault.DISAGREEMENT:
            self._post(KafkaLost(self._disagreement(error)))
        elif fault is GroupFault.FENCED:
            self._on_fenced(error)
        elif fault in (GroupFault.UNAVAILABLE, GroupFault.NO_BROKER):
            if self._watches_coordinator and fault is GroupFault.NO_BROKER:
                self._coordinator_up = False
            log.warning("Kafka coordination unavailable: %s", error)
            reason = f"{error.name()} ({error.code()}): {error.str()}"
            self._post(KafkaLost(reason, connection=fault is GroupFault.NO_BROKER))
        else:
            # librdkafka reports each failed reconnect here, many a second while a broker is down: through its
            # logger, whose filter passes one line per condition and window with the count of the rest
            librdkafka_logger().info("embedded member: %s", error)

    def _on_fenced(self, error: KafkaError) -> None:
        """Another consumer joined the group with our group.instance.id, and librdkafka stopped our client for
        good: one error line naming the instance id, and the loss of coordination, on which the worker releases
        every partition. Not rejoined: a new client would fence the other instance in turn."""
        if self._fenced:
            return
        self._fenced = True
        reason = (
            f"the embedded member was fenced: another Kafka consumer joined the group with its group.instance.id "
            f"{self._instance_id!r} (FENCED_INSTANCE_ID, {error.name()}); every bridge needs a consumer.id of its "
            "own, so look for a second instance with this one's consumer.id; this bridge releases its partitions "
            "and stays out of Kafka coordination until it is restarted"
        )
        log.error("%s", reason)
        self._post(KafkaLost(reason))

    def _disagreement(self, error: KafkaError) -> str:
        """The broker refused our JoinGroup because the group's members offer none of our assignors: one clear
        error line per refusal streak (librdkafka retries the join every few seconds), and the reason
        published with the authority, so `status` names it too."""
        reason = (
            f"the Kafka group's members disagree with this bridge on the rebalance protocol: none of them "
            f"offers its partition.assignment.strategy {self._strategy!r} ({self.protocol.value}), so the "
            f"broker refuses its JoinGroup ({error.name()}); give every member of the group a common assignor "
            "(docs/runbook.md, step 3)"
        )
        if not self._refused:
            log.error("%s", reason)
        self._refused = True
        return reason
