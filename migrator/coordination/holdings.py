"""The partitions a connector holds, and the I/O that changes them (CONTRACT §3 steps 2 and 5).

A held partition is three things kept in step: its owner node in ZooKeeper (the lock), its hand-out epoch
in the `Handoff`, and its route in the `Fetcher`. `Holdings` changes all three together, in the order that
keeps the lock meaningful: a partition is routed away and revoked (in-flight records finish) and its
offset committed before its owner node goes; its owner node exists before it is routed again.

Built by the connector, used only by the rebalance worker's thread. It measures where its time went
(`take_laps`), for the rebalance log.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from functools import partial

from migrator.assign.model import ThreadId
from migrator.consumer.handoff import Handoff
from migrator.consumer.listener import ConsumerRebalanceListener, ownership_by_topic
from migrator.consumer.stream import KafkaStream
from migrator.coordination.offsets import OffsetStore
from migrator.errors import ListenerError
from migrator.kafka.fetcher import Fetcher, Route
from migrator.metrics import ConnectorMetrics
from migrator.protocol.partition import TopicPartition
from migrator.zk import owners
from migrator.zk.errors import ZooKeeperError
from migrator.zk.paths import GroupPaths
from migrator.zk.session import ZkSession

log = logging.getLogger(__name__)

IN_FLIGHT_WAIT_S = 30.0  # how long a release waits for a record in an application thread's hands

StartResolver = Callable[[Mapping[TopicPartition, int]], dict[TopicPartition, int]]
OwnerClaimer = Callable[[Mapping[TopicPartition, ThreadId]], owners.ClaimResult]
"""Creates the owner nodes of a claim: `owners.claim`, or a dialect's claim whose node names do not exclude
each other by themselves (`zk.pykafka_group.claim_or_give_way`)."""


def _nothing() -> None:
    return None


def _after(first: Callable[[], None], then: Callable[[], None]) -> Callable[[], None]:
    """Wait for `first`'s replies, then for `then`'s (sent in that order)."""

    def both() -> None:
        first()
        then()

    return both


class Holdings:
    def __init__(
        self,
        *,
        zk: ZkSession,
        paths: GroupPaths,
        fetcher: Fetcher,
        handoff: Handoff,
        streams: Mapping[tuple[str, str], KafkaStream],
        offsets: OffsetStore,
        metrics: ConnectorMetrics,
        backoff_s: float,
        resolve_start: StartResolver,
        commit_on_release: bool,
        claim_owners: OwnerClaimer | None = None,
    ) -> None:
        """`commit_on_release` is `auto.commit.enable`: without it only the application's
        `commit_offsets()` commits (as in Scala), e.g. from `before_releasing_partitions`."""
        self._zk = zk
        self._paths = paths
        self._fetcher = fetcher
        self._handoff = handoff
        self._streams = streams
        self._offsets = offsets
        self._metrics = metrics
        self._backoff_s = backoff_s
        self._resolve_start = resolve_start
        self._commit_on_release = commit_on_release
        self._claim_owners = claim_owners or partial(owners.claim, zk, paths)
        self.listener = ConsumerRebalanceListener()
        self.owned: dict[TopicPartition, ThreadId] = {}
        self._laps: dict[str, float] = {}
        self._routes: dict[TopicPartition, Route] = {}
        self._owner_session: object = None  # the ZooKeeper session our owner nodes were created in
        self._deleting: list[tuple[Callable[[], None], dict[TopicPartition, ThreadId]]] = []
        """Owner deletes sent and not yet answered, with the partitions they release (`_settle_deletes`)."""

    def take_laps(self) -> dict[str, float]:
        """Where the time went (name -> seconds) since the last call, in the order it was spent."""
        laps, self._laps = self._laps, {}
        return laps

    def positions(self) -> dict[TopicPartition, int]:
        """Next offset to process of every held partition that has one."""
        processed = self._handoff.processed()
        return {tp: processed[tp] for tp in self.owned if tp in processed}

    def release(
        self,
        release: Mapping[TopicPartition, ThreadId],
        why: str,
        in_flight_wait_s: float = IN_FLIGHT_WAIT_S,
        tell_listener: bool = True,
        before_delete: Callable[[], None] | None = None,
        await_delete: bool = True,
    ) -> None:
        """Stop, let in-flight records finish, commit, tell the listener, (`before_delete`), delete our owner
        nodes. `before_delete` runs once nothing of these partitions is processed or committed any more and
        they are still locked: a shutting-down bridge leaves the Kafka group there. Without `await_delete`
        the deletes are only sent (a Kafka revoke: the group's JoinGroup waits for us, and the members that
        claim next wait for the nodes anyway), and so are the commit's ZooKeeper writes where Kafka took the
        offsets first (`OffsetStore.start_release_commit`); the next change of holdings waits for the replies.

        A listener that raises does not keep the partitions: they are released all the same, then
        `ListenerError` is raised for the worker to fail the connector."""
        self._settle_deletes()
        keep = {tp: th for tp, th in self.owned.items() if tp not in release}
        self._route_only(keep)
        t0 = time.monotonic()
        self._handoff.revoke(release, wait_s=in_flight_wait_s)
        t1 = time.monotonic()
        settle_offsets: Callable[[], None] = _nothing
        if self._commit_on_release:
            processed = self._handoff.processed()
            positions = {tp: processed[tp] for tp in release if tp in processed}
            if await_delete:
                self._offsets.commit(positions, releasing=True)
            else:  # sent ahead of the deletes; the next owners read Kafka's copy, already answered
                settle_offsets = self._offsets.start_release_commit(positions)
        t2 = time.monotonic()
        failure = self._tell_listener(release) if tell_listener else None
        t3 = time.monotonic()
        laps = {"in-flight": t1 - t0, "commit": t2 - t1, "listener": t3 - t2}
        if before_delete is not None:
            before_delete()
            laps["leave"] = time.monotonic() - t3
            t3 = time.monotonic()
        finish = owners.start_release(self._zk, self._paths, release, verify=self._zk.client_id != self._owner_session)
        if await_delete:
            finish()
        else:
            self._deleting.append((_after(settle_offsets, finish), dict(release)))
        laps["delete owners" if await_delete else "delete owners sent"] = time.monotonic() - t3
        self._laps.update(laps)
        self._forget(release)
        self.owned = keep
        log.info("released %d partitions (%s): %s", len(release), why,
                 ", ".join(f"{name} {seconds * 1e3:.0f} ms" for name, seconds in laps.items()))  # fmt: skip
        if failure is not None:
            raise failure

    def _tell_listener(self, release: Mapping[TopicPartition, ThreadId]) -> ListenerError | None:
        """`before_releasing_partitions`; what it raised, as the `ListenerError` to raise once released."""
        try:
            self.listener.before_releasing_partitions(ownership_by_topic(release))
        except Exception as exc:
            failure = ListenerError(f"before_releasing_partitions raised {type(exc).__name__}: {exc}")
            failure.__cause__ = exc
            return failure
        return None

    def move(self, moves: Mapping[TopicPartition, ThreadId]) -> None:
        """Give partitions to another of our threads without letting go of them: stop the old thread (its
        in-flight records finish), rewrite the owner nodes in place, and reopen each partition on the new
        thread where the old one stopped. Nothing is committed or fetched from the offset stores: the
        position never left this process, and the owner node never disappeared."""
        t0 = time.monotonic()
        self._settle_deletes()
        self._route_only({tp: th for tp, th in self.owned.items() if tp not in moves})
        self._handoff.revoke(moves, wait_s=IN_FLIGHT_WAIT_S)
        start = {tp: offset for tp, offset in self._handoff.processed().items() if tp in moves}
        t1 = time.monotonic()  # no listener call: the partitions do not leave this member
        verify = self._zk.client_id != self._owner_session
        handover = {tp: (self.owned[tp], th) for tp, th in moves.items()}
        lost = owners.rewrite(self._zk, self._paths, handover, verify)
        if lost:  # not ours any more (an operator deleted it?): claim those like any other partition
            log.warning("%d owner nodes were gone or not ours when moving them between threads", len(lost))
            self._forget(lost)
            for tp in lost:
                del self.owned[tp]
        moved = {tp: th for tp, th in moves.items() if tp not in lost}
        self._open(moved, {tp: start[tp] for tp in moved})
        self._laps.update({"move": t1 - t0, "rewrite owners": time.monotonic() - t1})

    def claim(self, claim: Mapping[TopicPartition, ThreadId], *, wait_first: bool = True) -> bool:
        """Create our owner nodes, fetch where to start, and open; False on a conflict (after waiting, at
        most one back-off, for the conflicting owners to let go).

        `wait_first`: read every owner node (with a watch) and wait for the previous owners before creating,
        for a claim whose previous owners release at about the same time (a switch): claiming early would
        only turn into create-conflict-delete-retry churn. Without it (the first claim after a Kafka
        assignment, whose previous owners released in the revoke that preceded it) the nodes are created at
        once, one request per partition fewer, and a conflict fails the claim. Names that follow facts which
        change (pykafka's leaders) are only given after a wait, so that dialect always waits."""
        t0 = time.monotonic()
        self._settle_deletes()
        if wait_first or not self._paths.naming.names_stable:
            released = owners.wait_until_released(self._zk, self._paths, sorted(claim), self._backoff_s, ours=claim)
            if released:
                self._paths.released(claim)
        else:
            # Kafka handed out this assignment only once every member it took partitions from had answered
            # its revoke, and a revoke answers after its release's commit (deleting the nodes follows): the
            # previous owners' last commits are in Kafka already (with dual commit their ZooKeeper writes were
            # sent before the deletes, and the fetch takes the larger of the two), or in ZooKeeper alone.
            released = True
        t1 = time.monotonic()
        # Once every previous owner's node is seen gone, its last commit is in both stores (a release commits
        # before it deletes): the offsets can be read while our nodes are being created, not after.
        fetching = self._fetch_meanwhile(claim) if released else None
        try:
            result = self._claim_owners(claim)
        except BaseException:
            self._settle(fetching, claim)
            raise
        t2 = time.monotonic()
        self._laps.update({"wait for owners": t1 - t0, "create owners": t2 - t1})
        if result.conflicts:
            self._settle(fetching, claim)
            owners.release(self._zk, self._paths, result.claimed)  # delete what this attempt created
            self._metrics.conflicts(len(result.conflicts))
            log.info(
                "%d owner conflicts (e.g. %s held by %s); waiting for them to be released",
                len(result.conflicts),
                *next(iter(result.conflicts.items())),
            )
            owners.wait_until_released(self._zk, self._paths, sorted(result.conflicts), self._backoff_s)
            return False
        try:
            start = self._resolve_start(fetching.result() if fetching is not None else self._offsets.fetch(claim))
        except Exception:
            owners.release(self._zk, self._paths, result.claimed)  # never keep a node we do not fetch for
            raise
        self._laps["fetch offsets"] = time.monotonic() - t2
        self._owner_session = self._zk.client_id
        self._open(claim, start)
        return True

    def _settle_deletes(self) -> None:
        """Wait for the replies to deletes only sent (`release(await_delete=False)`); a delete that failed is
        done again, reading each node first, so no node of a partition we let go of outlives the attempt."""
        while self._deleting:
            finish, released = self._deleting[0]
            try:
                finish()
            except ZooKeeperError:
                owners.release(self._zk, self._paths, released)  # raises if ZooKeeper still fails: retried
            self._deleting.pop(0)

    def _fetch_meanwhile(self, claim: Mapping[TopicPartition, ThreadId]) -> Future[dict[TopicPartition, int]]:
        """`OffsetStore.fetch` on a helper thread; the worker uses the store again only after its result."""
        future: Future[dict[TopicPartition, int]] = Future()

        def fetch() -> None:
            try:
                future.set_result(self._offsets.fetch(claim))
            except BaseException as exc:  # handed to the worker
                future.set_exception(exc)

        threading.Thread(target=fetch, name="offsets-fetch", daemon=True).start()
        return future

    def _settle(
        self, fetching: Future[dict[TopicPartition, int]] | None, claim: Mapping[TopicPartition, ThreadId]
    ) -> None:
        """A claim that failed: let its offset read end (the store is the worker's again), forget what it noted."""
        if fetching is not None:
            with contextlib.suppress(Exception):
                fetching.result()
            self._offsets.forget(claim)

    def drop_all(self) -> int:
        """The session that held our owner nodes expired: they are gone, so hand nothing more out. With
        `auto.commit.enable` the positions reached are what a commit would have stored: remembered, so that this
        member resumes there if it gets the partitions back (an application committing itself may not count
        what it was handed as done)."""
        lost = dict(self.owned)
        self._deleting.clear()  # gone with the session
        self._route_only({})
        self._handoff.revoke(lost, wait_s=0.0)
        if self._commit_on_release:
            processed = self._handoff.processed()
            self._offsets.remember({tp: processed[tp] for tp in lost if tp in processed})
        self._forget(lost)
        self.owned.clear()
        return len(lost)

    # -- keeping nodes, epochs and routes in step ------------------------------------------------------
    def _route_only(self, keep: Mapping[TopicPartition, ThreadId]) -> None:
        self._routes = {tp: r for tp, r in self._routes.items() if tp in keep}
        self._fetcher.route(dict(self._routes))

    def _open(self, owned: Mapping[TopicPartition, ThreadId], start: Mapping[TopicPartition, int]) -> None:
        """Start handing out `owned` from `start` on their threads' streams."""
        epoch = self._handoff.open(start, gated=True)  # until `before_starting_fetchers` returned
        for tp, thread in owned.items():
            stream = self._streams.get((tp.topic, thread)) or self._streams.get(("*", thread))
            if stream is None:
                log.error("no stream for %s on %s; not fetching it", thread, tp)
                continue
            self._routes[tp] = Route(stream, epoch, start[tp])
        self._fetcher.route(dict(self._routes))
        self.owned.update(owned)

    def _forget(self, tps: Mapping[TopicPartition, ThreadId] | set[TopicPartition]) -> None:
        self._handoff.forget(tps)
        self._offsets.forget(tps)
