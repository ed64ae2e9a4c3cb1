"""The rebalance worker: one thread per connector that handles every event, one at a time.

It owns the connector's coordination state (what it owns, which authority it obeys, and, through its
`KafkaGroupTracker`, what Kafka assigned) so nothing else needs a lock on it. A rebalance is the
release / compute / claim path of CONTRACT §3, used for ZooKeeper changes, Kafka assignments and authority
switches alike; only partitions whose owner changes are released and claimed, and a partition that only
changes thread is handed over in place.

While the mode is `kafka` a bridge never falls back to ZooKeeper's assignment as long as the Kafka group has
(or last had) plain Kafka consumers: it holds nothing instead (`authority.guard_fallback`, fed by
`KafkaGroupTracker.guard`, which describes the group with the admin client independently of the embedded
member, which may be refused) and re-evaluates every `GUARD_RECHECK_S` until Kafka authority is healthy
again or no plain member remains. A fallback decided because Kafka did not answer DescribeGroups is
re-evaluated every `KAFKA_RECHECK_S` for the same reason: no event says when Kafka answers again.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Set
from dataclasses import dataclass, field
from enum import Enum

from migrator.assign.legacy import Assignor
from migrator.assign.model import ThreadId
from migrator.consumer.handoff import Handoff
from migrator.consumer.listener import ConsumerRebalanceListener, by_topic
from migrator.coordination.authority import (
    AuthorityDecision,
    Hold,
    KafkaHealth,
    decide_authority,
    in_kafka_group,
    next_hold,
    routine,
)
from migrator.coordination.clock import Clock
from migrator.coordination.gating import (
    DEFER_S,
    Gate,
    claims_wait_first,
    coalesces,
    defers,
    due,
    gate,
    label,
    publishes,
    reads_members_only,
    refreshable,
    revoked_holdings,
    tells_listener,
    wait_timeout,
)
from migrator.coordination.holdings import Holdings
from migrator.coordination.kafka_group import DESCRIBE_RETRY_S, KafkaGroupTracker
from migrator.coordination.offsets import OffsetStore
from migrator.coordination.plan import Target, Transition, decided_target, kafka_members, transition
from migrator.errors import ListenerError
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.metrics import ConnectorMetrics
from migrator.protocol.codecs import Authority, Mode, PublishedAuthority, Registration
from migrator.protocol.events import (
    Changed,
    CommitRequest,
    Event,
    KafkaAssigned,
    KafkaLost,
    KafkaRevoked,
    SessionLost,
    SessionRestored,
    Shutdown,
    Trigger,
)
from migrator.protocol.fetch import FetchState
from migrator.protocol.partition import TopicPartition
from migrator.zk.errors import ZooKeeperError
from migrator.zk.registry import Registry, Watches
from migrator.zk.snapshot import Snapshot, SnapshotReader

log = logging.getLogger(__name__)

COALESCE_S = 0.01  # events closer together than this become one rebalance
LAG_EVERY_S = 5.0  # at most one ListOffsets round trip per this interval for the lag gauge
SHUTDOWN_IN_FLIGHT_WAIT_S = 10.0  # a release at shutdown waits less for a record in the application's hands
GUARD_RECHECK_S = 2.0  # while holding nothing, re-evaluate this often even if no event arrives
KAFKA_RECHECK_S = DESCRIBE_RETRY_S  # after a fallback because Kafka did not answer DescribeGroups, this often
LEAVE_WAIT_S = 5.0  # at shutdown, how long the owner nodes wait for the embedded member's LeaveGroup


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    consumer_id: str
    strategy: str | Assignor
    """A `partition.assignment.strategy` name, or a dialect's own assignor."""
    max_retries: int
    backoff_ms: int
    auto_commit_interval_ms: int | None
    bootstrap_servers: str = ""
    """Published with the authority (bridges only), so operator commands can find the group's brokers."""
    kafka_beside_legacy: bool = True
    """Whether the embedded member stays in the Kafka group while legacy members are registered
    (`authority.in_kafka_group`; False in the pykafka dialect)."""


@dataclass(frozen=True, slots=True)
class WorkerParts:
    """The collaborators the connector builds for one worker. `kafka` for a bridge (its embedded member's
    view of the Kafka group); `admin` for the lag gauge; `clock` (monotonic seconds) for every deadline."""

    snapshots: SnapshotReader
    registry: Registry
    watches: Watches
    holdings: Holdings
    offsets: OffsetStore
    handoff: Handoff
    metrics: ConnectorMetrics
    kafka: KafkaGroupTracker | None = None
    admin: KafkaAdmin | None = None
    clock: Clock = time.monotonic
    fetch_state: Callable[[], FetchState] = FetchState
    """Which owned partitions the fetcher keeps failing to read (published with the authority)."""
    owner_upkeep: Callable[[], None] | None = None
    """What the dialect does to the owner nodes this member holds after each snapshot read, before assigning
    (pykafka: rename them after their partitions' current leaders)."""


class Attempt(Enum):
    """How one rebalance attempt ended."""

    DONE = "done"
    UNUSABLE = "unusable"
    """The snapshot cannot be decided over (corrupt, or not registered yet): keep everything, wait for a change."""
    CONFLICT = "conflict"
    """Another member still held a partition to claim; the claim already waited for it: retry at once."""
    FAILED = "failed"
    """ZooKeeper or Kafka failed: retry after the back-off."""
    REDECIDE = "redecide"
    """Claimed on the last description's word (`presumably_whole`), and this rebalance's describe found a
    registered bridge missing: decide again at once, over that describe."""


@dataclass(slots=True)
class State:
    """What the worker alone reads and writes."""

    authority: Authority = Authority.ZOOKEEPER
    mode_is_kafka: bool = False
    generation: int = 0
    registered: bool = False
    retry_at: float | None = None
    closed: bool = False
    hold: Hold = field(default_factory=Hold)
    """Whether, why and since when the bridge holds nothing (`Hold.kind` None when it does not)."""
    failed: ListenerError | None = None
    """The application's listener raised: the connector left the group and only waits for `shutdown()`."""


class RebalanceWorker:
    def __init__(self, *, settings: WorkerSettings, registration: Registration, parts: WorkerParts) -> None:
        self.s = settings
        self._snapshots = parts.snapshots
        self._owner_upkeep = parts.owner_upkeep
        self._registration = registration
        self._registry = parts.registry
        self._watches = parts.watches
        self._offsets = parts.offsets
        self._handoff = parts.handoff
        self._holdings = parts.holdings
        self._metrics = parts.metrics
        self._kafka = parts.kafka
        self._admin = parts.admin
        self._clock = parts.clock
        self._fetch_state = parts.fetch_state
        self._last_decision: AuthorityDecision | None = None  # the last one published
        self.state = State()
        self._events: queue.Queue[Event] = queue.Queue()
        self._stopping = threading.Event()  # set by `stop_soon`: no further attempts or back-offs
        self._thread = threading.Thread(target=self._run, name=f"rebalance-{settings.consumer_id}", daemon=True)
        self._lag_due = 0.0
        self._published_reason = ""
        self._snapshot: Snapshot | None = None  # the last full read, reused while only the mode changes
        self._missing_topics: tuple[str, ...] = ()  # as last logged
        self._last_error = ""  # logged with its traceback once; the same again only at DEBUG
        self._left = False  # shutdown deregistered and left the Kafka group before deleting the owner nodes
        self._deferred: set[Trigger] = set()  # triggers held back until the Kafka rebalance ends (`_defer`)
        self._defer_due: float | None = None  # the retry set to evaluate them if no assignment comes
        self._next_commit = self._commit_deadline()
        self._listened = False  # the application set a listener (`listener`): it is told before records flow

    # -- the outside world's side ----------------------------------------------------------------------
    @property
    def owned(self) -> dict[TopicPartition, ThreadId]:
        """partition -> thread id of what this connector holds now (read by the connector for callers)."""
        return self._holdings.owned

    @property
    def listener(self) -> ConsumerRebalanceListener:
        return self._holdings.listener

    @listener.setter
    def listener(self, listener: ConsumerRebalanceListener) -> None:
        """The application's listener (`set_rebalance_listener`); without one, the hooks do nothing."""
        self._holdings.listener = listener
        self._listened = True

    def post(self, event: Event) -> None:
        self._events.put(event)

    def stop_soon(self) -> None:
        """Before posting `Shutdown`: end a rebalance in progress after its current attempt instead of retrying
        (each attempt is bounded by the ZooKeeper and Kafka timeouts), so shutdown waits at most one attempt.
        The embedded member's poll thread starts waiting in short slices, so the shutdown's commit and leave
        through it are served at once."""
        self._stopping.set()
        if self._kafka is not None:
            self._kafka.member.expect_leave()

    def start(self) -> None:
        self._thread.start()

    def start_watches(self) -> None:
        self._watches.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def on_worker_thread(self) -> bool:
        """Whether the caller is this worker (a rebalance listener calling back into the connector)."""
        return threading.current_thread() is self._thread

    def commit_now(self) -> None:
        """`commit_offsets()` from a listener: the worker is in the middle of a rebalance and cannot serve a
        queued request, so commit here, while everything being released is still owned."""
        self._commit_processed()

    # -- the loop --------------------------------------------------------------------------------------
    def register(self) -> None:
        """Register in ZooKeeper before the worker starts, so the member is visible when the application's
        `create_message_streams` returns (as with the Scala connector)."""
        self._register()

    def preread(self) -> None:
        """Before the worker starts, while the embedded member joins the Kafka group: read the group and watch
        its topics as an attempt does. The first rebalance, after the assignment every partition of the group
        waits on, then reads only the members registered since (`gating.reads_members_only`), this one among
        them, instead of everything; a change of mode or partitions meanwhile posts its trigger, which reads
        everything again."""
        if self._owner_upkeep is not None:  # names that follow the leaders are only given after a full read
            return
        try:
            snap = self._snapshots.read()
        except ZooKeeperError:
            return  # the first rebalance reads everything, as without this
        if snap.usable:
            self._watch_topics(snap)
            self._snapshot = snap

    def _run(self) -> None:
        # The first evaluation goes through the queue, after anything posted before the thread started
        # (a bridge's first Kafka assignment in particular): deciding without it would obey ZooKeeper and
        # claim partitions that plain Kafka consumers are processing.
        self.post(Changed(Trigger.START))
        while not self.state.closed:
            self.step(self._next_batch())

    def step(self, batch: list[Event]) -> None:
        """One turn of the loop over a batch of events; it never raises, so the loop survives anything. Unit
        tests call it directly, driving the worker without its thread."""
        try:
            if self.state.failed is not None:
                self._handle_failed(batch)
            else:
                self._handle(batch)
        except ListenerError as exc:
            self._fail(exc)
            self._handle_failed(batch)  # what the batch still had waiting for an answer
        except Exception as exc:  # keep the loop alive: the application must never lose its connector
            # once with its traceback; the same error again (every retry) only at DEBUG
            error = f"{type(exc).__name__}: {exc}"
            level = logging.DEBUG if error == self._last_error else logging.ERROR
            log.log(level, "rebalance failed (%s); retrying in %d ms", error, self.s.backoff_ms,
                    exc_info=level == logging.ERROR)  # fmt: skip
            self._last_error = error
            self.state.retry_at = self._clock() + self.s.backoff_ms / 1000.0

    def _next_batch(self) -> list[Event]:
        timeout = wait_timeout(self._clock(), self._next_commit, self.state.retry_at)
        try:
            batch = [self._events.get(timeout=timeout)]
        except queue.Empty:
            return []
        if coalesces(batch[0]):
            time.sleep(COALESCE_S)
        while True:
            try:
                batch.append(self._events.get_nowait())
            except queue.Empty:
                return batch

    def _handle(self, batch: list[Event]) -> None:
        triggers: set[Trigger] = set()
        for event in batch:
            match event:
                case Changed(what=Trigger.FETCH):
                    self._republish_fetch()
                case KafkaRevoked():
                    self._on_kafka_revoked(event)
                case KafkaAssigned(partitions=partitions) if self._kafka is not None:
                    self._kafka.assigned(partitions)
                    triggers.add(Trigger.KAFKA_ASSIGNMENT)
                case KafkaLost(reason=reason, connection=connection) if self._kafka is not None:
                    self._kafka.unavailable(reason, connection=connection)
                    triggers.add(Trigger.KAFKA_LOST)
                case Changed(what=what):
                    triggers.add(what)
                case SessionLost():
                    self._on_session_lost()
                case SessionRestored():
                    self._register()
                    triggers.add(Trigger.NEW_SESSION)
                case CommitRequest(done=done):
                    positions: dict[TopicPartition, int] = {}
                    try:
                        positions = self._commit_processed()
                    finally:
                        done.set_result(None)  # the application waits for its commit, not for the lag gauge
                    self._measure_lag(positions)
                case Shutdown(done=done):
                    try:
                        self._shutdown()
                    finally:
                        done.set_result(None)
                    return
        now = self._clock()
        if due(now, self.state.retry_at):
            self.state.retry_at = None
            triggers.add(Trigger.RETRY)
        triggers = self._defer(triggers)
        match gate(triggers, mode_is_kafka=self.state.mode_is_kafka, authority=self.state.authority):
            case Gate.EVALUATE:
                self._evaluate(triggers)
            case Gate.PREFETCH if self._kafka is not None:
                self._kafka.prefetch()
        if due(now, self._next_commit):
            self._measure_lag(self._commit_processed())
            self._next_commit = self._commit_deadline()

    def _defer(self, triggers: set[Trigger]) -> set[Trigger]:
        """The triggers to evaluate now: those `defers` holds back (a joining bridge registering during the
        Kafka rebalance, typically) join the assignment's evaluation, or are evaluated `DEFER_S` after the
        revoke if no assignment comes."""
        since = self._kafka.rebalancing_since() if self._kafka is not None else None
        rebalancing_s = None if since is None else self._clock() - since
        if defers(
            triggers, rebalancing_s=rebalancing_s, mode_is_kafka=self.state.mode_is_kafka, holds=bool(self.owned)
        ):
            assert since is not None
            self._deferred |= triggers
            at = since + DEFER_S
            if self.state.retry_at is None or at < self.state.retry_at:
                self.state.retry_at = self._defer_due = at
            return set()
        if triggers and self._deferred:
            triggers, self._deferred = triggers | self._deferred, set()
            if self.state.retry_at == self._defer_due:  # the assignment came first: no need to retry then
                self.state.retry_at = None
        return triggers

    def _fail(self, exc: ListenerError) -> None:
        """The application's listener raised. Keeping the partitions would stall them for the whole group,
        and retrying would call the listener again: release everything (without the listener), leave the
        group in ZooKeeper and Kafka, and let every stream raise the error until the application shuts down."""
        log.error("%s; this member leaves the group and its streams raise ListenerError", exc, exc_info=exc.__cause__)
        self.state.failed = exc
        self.state.retry_at = None
        try:
            if self.owned:
                self._holdings.release(dict(self.owned), "listener failed", SHUTDOWN_IN_FLIGHT_WAIT_S, False)
            self._registry.deregister()
        except ZooKeeperError:
            log.warning("leaving the group after the listener failed is incomplete", exc_info=True)
        if self._kafka is not None:
            self._kafka.member.subscribe([])
        self.state.registered = False
        self._handoff.fail(exc)

    def _handle_failed(self, batch: list[Event]) -> None:
        """After `_fail`: answer what waits for an answer; a shutdown ends the loop."""
        for event in batch:
            match event:
                case KafkaRevoked(done=done) | CommitRequest(done=done) if not done.done():
                    done.set_result(None)
                case Shutdown(done=done) if not done.done():
                    try:
                        self._watches.stop()
                    finally:
                        self.state.closed = True
                        done.set_result(None)
                    return

    def _commit_deadline(self) -> float | None:
        """None with `auto.commit.enable=false`: then only `commit_offsets()` commits."""
        interval = self.s.auto_commit_interval_ms
        return None if interval is None else self._clock() + interval / 1000.0

    # -- registration and sessions ---------------------------------------------------------------------
    def _register(self) -> None:
        try:
            self._registry.register(self._registration)
            self.state.registered = True
            self._handoff.resume()
        except ZooKeeperError as exc:  # ZooKeeper unreachable or the session gone: one line, not a traceback
            log.warning("registration in ZooKeeper failed (%s); retrying", type(exc).__name__)
            self.state.retry_at = self._clock() + self.s.backoff_ms / 1000.0

    def _on_session_lost(self) -> None:
        """Our ephemeral owners are gone with the session: stop everything we no longer own."""
        lost = self._holdings.drop_all()
        self.state.registered = False
        self._snapshot = None  # the next session's first rebalance reads everything
        log.warning("ZooKeeper session expired; %d partitions dropped until the next rebalance", lost)
        self._metrics.authority(False, 0, 0)

    def _on_kafka_revoked(self, event: KafkaRevoked) -> None:
        if self._kafka is not None:
            self._kafka.revoked(event.lost, event.partitions)
        try:
            going = revoked_holdings(self.owned, event.partitions, self.state.authority, self.state.mode_is_kafka)
            if going:
                # send-only deletes: ZooKeeper applies our session's requests in order, and the next owners
                # wait for the nodes to be gone anyway; the replies are checked at the next change of holdings
                # first what no thread is processing, so its next owners need not wait for a slow record
                busy = self._handoff.in_hand(going)
                free = {tp: th for tp, th in going.items() if tp not in busy}
                if free:
                    self._holdings.release(free, "kafka revoke", await_delete=False)
                rest = {tp: th for tp, th in self.owned.items() if tp in going}
                if rest:
                    self._holdings.release(rest, "kafka revoke", await_delete=False)
        finally:
            event.done.set_result(None)

    # -- the rebalance ---------------------------------------------------------------------------------
    def _evaluate(self, triggers: Set[Trigger]) -> None:
        if not self.state.registered:
            self._register()  # a registration that failed earlier is retried with the next evaluation
            if not self.state.registered:
                return
        started = time.monotonic()
        outcome = None
        for attempt in range(1, self.s.max_retries + 1):
            if self._stopping.is_set():
                log.info("shutting down: rebalance (%s) abandoned after %d attempts", label(triggers), attempt - 1)
                return
            try:
                outcome = self._attempt(triggers, after_conflict=outcome is Attempt.CONFLICT)
            except (ZooKeeperError, KafkaUnavailable) as exc:
                log.warning("rebalance attempt %d failed: %s", attempt, exc)
                outcome = Attempt.FAILED
            finally:
                self._handoff.ungate()  # whatever the attempt opened (a failed one: the next attempt decides)
            if outcome is Attempt.DONE:
                self._metrics.rebalanced(time.monotonic() - started)
                return
            if outcome is Attempt.UNUSABLE:
                return
            if attempt < self.s.max_retries and outcome in (Attempt.CONFLICT, Attempt.REDECIDE):
                continue  # the claim waited for the conflicting owners already; a redecision has its answer
            if attempt < self.s.max_retries:
                self._stopping.wait(self.s.backoff_ms / 1000.0)
        if outcome is Attempt.CONFLICT:  # owners still releasing (e.g. waiting for an in-flight record)
            log.warning("partitions still owned by other members after %d attempts (%s); retrying later",
                        self.s.max_retries, label(triggers))  # fmt: skip
        else:
            log.error("rebalance failed after %d attempts (%s); retrying later", self.s.max_retries, label(triggers))
        self._metrics.rebalance_failed()
        self.state.retry_at = self._clock() + self.s.backoff_ms / 1000.0

    def _attempt(self, triggers: Set[Trigger], *, after_conflict: bool = False) -> Attempt:
        """One release / compute / claim; `after_conflict`: the previous attempt found partitions still held,
        so this one's claim waits for the previous owners first whatever the triggers."""
        cid = self.s.consumer_id
        self._holdings.take_laps()  # what releases outside a rebalance measured is not this attempt's
        if self._kafka is not None and Trigger.KAFKA_ASSIGNMENT in triggers:
            self._kafka.describe_ahead()
        t_start, cpu_start = time.monotonic(), time.thread_time()
        snap, read = self._read_snapshot(triggers)
        unusable = self._check_snapshot(snap)
        if unusable is not None:
            return unusable
        if self._kafka is not None:
            joins = in_kafka_group(snap.member_ids, snap.migration_ids, beside_legacy=self.s.kafka_beside_legacy)
            self._kafka.member.subscribe(sorted(snap.subscriptions.get(cid, {})) if joins else [])
        t_snapshot = time.monotonic()
        laps = {read: t_snapshot - t_start}
        presume = Trigger.KAFKA_ASSIGNMENT in triggers and self.state.authority is Authority.KAFKA
        target, decision, presumed = self._target(snap, presume=presume)
        plan = transition(self.owned, target.own)
        laps["decide"] = time.monotonic() - t_snapshot
        wait_first = after_conflict or claims_wait_first(
            triggers, prior=self.state.authority, decided=decision.authority
        )
        if not self._apply(plan, decision, laps, wait_first=wait_first):
            return Attempt.CONFLICT
        if presumed:
            checked = self._confirmed(snap, target, decision, laps)
            if checked is None:
                return Attempt.REDECIDE
            target, decision = checked
        changed = bool(plan.claim or plan.release) or decision.authority is not self.state.authority
        if tells_listener(changed, triggers):
            try:
                self.listener.before_starting_fetchers(cid, by_topic(target.global_))
            except Exception as exc:
                failure = ListenerError(f"before_starting_fetchers raised {type(exc).__name__}: {exc}")
                raise failure from exc
        self._handoff.ungate()
        new_reason = decision.reason != self._published_reason
        self._finish(decision, publish=publishes(changed, triggers))
        if changed:
            laps.update(self._holdings.take_laps())
            laps["worker cpu"] = time.thread_time() - cpu_start
            log.info("rebalance (%s): %s authority, released %d, moved %d, claimed %d; %s", label(triggers),
                     decision.authority.value, len(plan.leaving), len(plan.moves), len(plan.arriving),
                     ", ".join(f"{name} {seconds * 1e3:.0f} ms" for name, seconds in laps.items()))  # fmt: skip
        elif Trigger.MODE in triggers and not decision.held:
            # an operator's mode write that changes nothing here would otherwise be invisible in the log
            log.info("mode changed; authority stays %s: %s", decision.authority.value, decision.reason)
        elif new_reason and not decision.held:
            # why a bridge stays where it is would otherwise be only in ZooKeeper (held ones: `_note_hold`)
            log.info("authority stays %s: %s", decision.authority.value, decision.reason)
        return Attempt.DONE

    def _check_snapshot(self, snap: Snapshot) -> Attempt | None:
        """Watch the subscribed topics, log the missing ones; `Attempt.UNUSABLE` when the snapshot cannot be
        decided over (corrupt, or this member not registered yet)."""
        cid = self.s.consumer_id
        self._watch_topics(snap)
        if snap.missing_topics != self._missing_topics:
            self._missing_topics = snap.missing_topics
            if snap.missing_topics:
                log.warning("subscribed topics that do not exist: %s; assigning the others (as the Scala connector)",
                            ", ".join(snap.missing_topics))  # fmt: skip
        if not snap.usable:
            log.error("not rebalancing: %s; keeping %d partitions", "; ".join(snap.problems), len(self.owned))
            self._metrics.snapshot_rejected()
            return Attempt.UNUSABLE
        if cid not in snap.registrations:
            log.info("not registered in ZooKeeper yet; rebalance waits")
            return Attempt.UNUSABLE
        return None

    def _watch_topics(self, snap: Snapshot) -> None:
        self._watches.watch_topics(snap.subscriptions.get(self.s.consumer_id, {}), self._registration.is_wildcard)
        for other in snap.subscriptions.values():
            self._watches.watch_topics(other, False)

    def _apply(
        self, plan: Transition, decision: AuthorityDecision, laps: dict[str, float], *, wait_first: bool = True
    ) -> bool:
        """Release, move and claim as `plan` says, timing each step into `laps`; False when another member
        still held a partition to claim. `wait_first`: see `gating.claims_wait_first`."""
        t_decided = time.monotonic()
        if plan.leaving:
            self._holdings.release(plan.leaving, decision.reason)
        t_released = time.monotonic()
        if plan.moves:
            self._holdings.move(plan.moves)
        arriving = {tp: th for tp, th in plan.claim.items() if self.owned.get(tp) != th}
        claimed = not arriving or self._holdings.claim(arriving, wait_first=wait_first)
        laps["release"] = t_released - t_decided
        laps["claim"] = time.monotonic() - t_released
        return claimed

    def _read_snapshot(self, triggers: Set[Trigger]) -> tuple[Snapshot, str]:
        """The full snapshot; the last one when `refreshable` allows (with a fresh mode if the mode changed);
        the last one with its changed members read again when `reads_members_only` allows; and the name of what
        was read, for the rebalance log."""
        last, self._snapshot = self._snapshot, None  # a failed read leaves nothing to reuse
        if last is not None and refreshable(triggers, last.usable, last.watched):
            if Trigger.MODE in triggers:
                snap, read = self._snapshots.refresh_mode(last), "mode read"
            else:
                snap, read = last, "snapshot reused"
            self._snapshot = snap if snap.usable else None
            return snap, read
        changed = None
        if last is not None and self._owner_upkeep is None and reads_members_only(triggers, last.usable, last.watched):
            changed = self._snapshots.read_members(last)
        if changed is not None:
            snap, read = changed, "members read"
        else:
            snap, read = self._snapshots.read(), "snapshot"
            if self._owner_upkeep is not None:
                self._owner_upkeep()
        self._snapshot = snap if snap.usable else None
        return snap, read

    def _confirmed(
        self, snap: Snapshot, presumed: Target, decision: AuthorityDecision, laps: dict[str, float]
    ) -> tuple[Target, AuthorityDecision] | None:
        """The target and decision over this rebalance's describe, after claiming on the last description's
        word; None when they differ from what was claimed (the attempt is then decided again).

        Without an application listener nobody needs the group's whole assignment before records flow, so
        they flow while the describe answers: the owner nodes are held, and a describe that says otherwise
        makes the next attempt release them (committed, as any release)."""
        if not self._listened:
            self._handoff.ungate()
        t_claimed = time.monotonic()
        target, checked, _ = self._target(snap)
        laps["describe after claims"] = time.monotonic() - t_claimed
        same = checked.authority is decision.authority and checked.held == decision.held and target.own == presumed.own
        if not same:
            log.info("the Kafka group's describe after the claims says otherwise (%s); deciding again", checked.reason)
            return None
        return target, checked

    def _target(self, snap: Snapshot, *, presume: bool = False) -> tuple[Target, AuthorityDecision, bool]:
        """What to hold and why, and whether the Kafka health was presumed (`presume`: a Kafka assignment to a
        bridge obeying Kafka may be claimed on the last description's word, `KafkaGroupTracker.presumed_health`)."""
        cid = self.s.consumer_id
        presumed = self._kafka.presumed_health(snap) if presume and self._kafka is not None else None
        if self._kafka is None:
            health, group = KafkaHealth(joined=False, reason="migration is not enabled"), None
        elif presumed is not None:
            health, group = presumed, None
        else:
            health, group = self._kafka.health(snap)
        decision = decide_authority(snap.mode, snap.member_ids, snap.migration_ids, health)
        self.state.mode_is_kafka = snap.mode.mode is Mode.KAFKA
        self._metrics.mode(snap.mode.mode.value if snap.mode.mode else "unknown" if snap.mode.exists else "absent")
        if decision.unknown_mode_value is not None:
            log.warning(
                "unknown value %r in %s; obeying ZooKeeper", decision.unknown_mode_value, self._snapshots.mode_path
            )
            self._metrics.unknown_mode()
        if self._kafka is not None:
            decision = self._kafka.guard(snap, decision, group)
        members = None if group is None else kafka_members(group.members, snap.registered_bridges)
        assigned = self._kafka.assignment if self._kafka is not None else None
        target = decided_target(decision, cid, snap.subscriptions, snap.partitions, self.s.strategy, assigned, members)
        return target, decision, presumed is not None

    def _finish(self, decision: AuthorityDecision, publish: bool) -> None:
        """Record the outcome; publish it when it changed, or when an operator is waiting for it (a mode
        write, a start, a new session) — not on every Kafka retry of a bridge refused by the broker."""
        authority, reason = decision.authority, decision.reason
        publish = publish or reason != self._published_reason
        if authority is not self.state.authority:
            level = logging.INFO if routine(self.state.hold, decision) else logging.WARNING
            log.log(level, "authority %s -> %s: %s", self.state.authority.value, authority.value, reason)
            self._metrics.switched(authority.value)
        self.state.authority = authority
        kafka = authority is Authority.KAFKA
        tracker = self._kafka
        self._metrics.authority(kafka, len(tracker.assignment or ()) if tracker else 0, len(self.owned))
        self._metrics.kafka_unavailable(tracker is not None and not tracker.coordinated())
        self._note_hold(decision)
        if publish:
            self._publish(decision)

    def _publish(self, decision: AuthorityDecision) -> None:
        self._published_reason = decision.reason
        self._last_decision = decision
        self.state.generation += 1
        self._registry.publish(
            PublishedAuthority(
                authority=decision.authority,
                generation=self.state.generation,
                timestamp_ms=int(time.time() * 1000),
                reason=decision.reason,
                kafka_member_id=self._kafka.member.member_id() if self._kafka else "",
                partitions=len(self.owned),
                held=decision.held,
                bootstrap=self.s.bootstrap_servers if self._kafka else "",
                fetch=self._fetch_state(),
                protocol=self._kafka.member.protocol if self._kafka else None,
            )
        )

    def _republish_fetch(self) -> None:
        """Publish again when what the fetcher cannot read changed, so `status` names it (nothing is decided)."""
        if self._last_decision is not None and self.state.registered:
            self._publish(self._last_decision)

    def _note_hold(self, decision: AuthorityDecision) -> None:
        """Log the hold as `authority.next_hold` says, expose it, and keep re-evaluating while it lasts: plain
        members may leave with no ZooKeeper or Kafka event reaching us."""
        self.state.hold, level, message = next_hold(self.state.hold, decision, self._clock())
        if level is not None:
            log.log(level, "%s", message)
        held = self.state.hold.kind is not None
        self._metrics.fallback_held(held)
        if held:
            self._recheck_in(GUARD_RECHECK_S)
        elif decision.recheck:
            self._recheck_in(KAFKA_RECHECK_S)

    def _recheck_in(self, seconds: float) -> None:
        """Evaluate again after `seconds` even if no event arrives (an earlier deadline stays)."""
        at = self._clock() + seconds
        self.state.retry_at = at if self.state.retry_at is None else min(self.state.retry_at, at)

    def _leave_kafka_group(self) -> None:
        """Deregister from ZooKeeper, then leave the Kafka group, still holding the owner nodes.

        Deregistering first matters to the other bridges: one that decides while we are registered but no
        longer in the Kafka group would find a bridge missing from it and fall back to ZooKeeper's assignment.
        Under Kafka authority every registered member is a bridge, and bridges claim by waiting for the owner
        nodes, so nothing reacts to the deregistration before they are deleted."""
        assert self._kafka is not None
        t0 = time.monotonic()
        self._registry.deregister()
        self._left = True
        t1 = time.monotonic()
        self._kafka.member.leave()
        if self._kafka.member.wait_left(LEAVE_WAIT_S):
            log.info("embedded member closed (LeaveGroup unless static) before deleting the owner nodes: "
                     "deregister %.0f ms, close %.0f ms", (t1 - t0) * 1e3, (time.monotonic() - t1) * 1e3)  # fmt: skip
        else:
            log.warning("the embedded member did not leave the Kafka group within %.0fs", LEAVE_WAIT_S)

    # -- commits and shutdown --------------------------------------------------------------------------
    def _commit_processed(self) -> dict[TopicPartition, int]:
        """Commit the positions of everything held; returns them."""
        if not self.owned:
            return {}
        positions = self._holdings.positions()
        try:
            self._offsets.commit(positions)
        except ZooKeeperError:
            log.warning("offset commit failed; retrying at the next commit", exc_info=True)
        return positions

    def _measure_lag(self, positions: dict[TopicPartition, int]) -> None:
        """Set the lag gauge from `positions` (just committed), at most every `LAG_EVERY_S`: a ListOffsets
        round trip."""
        if positions and self._admin is not None and self._clock() >= self._lag_due:
            self._lag_due = self._clock() + LAG_EVERY_S
            try:
                ends = self._admin.log_end_offsets(positions)
            except KafkaUnavailable:
                return
            self._metrics.lag(sum(max(0, end - positions[tp]) for tp, end in ends.items() if positions[tp] >= 0))

    def _shutdown(self) -> None:
        """Release everything and leave. Under Kafka authority a bridge leaves the Kafka group as soon as
        nothing more is processed or committed, before deleting its owner nodes: the group's rebalance (which
        waits for the other members' next heartbeat) then overlaps the release, and the members that get the
        partitions wait for those owner nodes as always. After this the loop ends: no later event (the
        embedded member gone from the group) can make this connector decide, fall back or claim again."""
        leave_early = self._kafka is not None and self.state.authority is Authority.KAFKA
        try:
            if self.owned and self.state.registered:
                try:
                    self._holdings.release(
                        dict(self.owned),
                        "shutdown",
                        SHUTDOWN_IN_FLIGHT_WAIT_S,
                        before_delete=self._leave_kafka_group if leave_early else None,
                    )
                except ListenerError as exc:  # released all the same; shutting down is what the app asked for
                    log.error("%s during shutdown", exc, exc_info=exc.__cause__)
            if not self._left:
                self._registry.deregister()
        except ZooKeeperError as exc:
            log.warning("clean shutdown incomplete (%s); ZooKeeper will expire our session", type(exc).__name__)
        finally:
            self._watches.stop()
            self.state.closed = True
