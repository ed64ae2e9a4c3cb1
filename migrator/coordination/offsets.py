"""Committing and fetching offsets across the two stores (CONTRACT §4).

Commit: Kafka first when offsets live in Kafka, then ZooKeeper for every partition Kafka accepted
(dual commit) or for all (ZooKeeper storage). Fetch: max(ZooKeeper, Kafka) with dual commit.

A release (the owner node goes next) writes ZooKeeper also for the partitions Kafka refused (its generation
gone, its coordinator away): ZooKeeper is then the only store that can carry the position to the next
owner, which reads max(ZooKeeper, Kafka); Kafka's copy catches up at the next commit it accepts. Outside a
release, ZooKeeper gets only what Kafka accepted (CONTRACT §4).

A member that gives a partition up without its position reaching either store (its ZooKeeper session
expired before it committed, or ZooKeeper failed the write too) remembers that position, and resumes from it
if it gets the partition back while the stores are still behind: it processed every record below it itself,
so starting there loses nothing, and starting at the stores' offset would only have it process those
records again.

While a bridge's Kafka coordination is unavailable (its member refused with GROUP_MAX_SIZE_REACHED, or
not joined) Kafka would refuse every commit for want of a generation; the bridge then obeys ZooKeeper and
commits to ZooKeeper alone, so a clean leave still hands over exactly. The max() fetch makes the Kafka
store catch up at the next commit that Kafka accepts.

Where Kafka is the only store and the next owner resumes from it (the pykafka dialect: its members commit
without a generation, which the broker refuses while the Kafka group still has a member, e.g. a bridge's
embedded member or a consumer that has not left yet), a release keeps retrying its commit, with the backoff,
until Kafka takes it or the commit timeout is spent, not only `offsets.commit.max.retries` times: the owner
node goes only after that, and a new owner that starts below what this member processed processes it twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Set
from typing import Protocol

from migrator.kafka.commit import GenerationMoved
from migrator.metrics import ConnectorMetrics
from migrator.protocol import stores
from migrator.protocol.partition import TopicPartition
from migrator.zk import offsets as zk_offsets
from migrator.zk.paths import GroupPaths
from migrator.zk.session import ZkSession

log = logging.getLogger(__name__)


class KafkaOffsets(Protocol):
    def commit(self, offsets: Mapping[TopicPartition, int], timeout_s: float) -> set[TopicPartition]:
        """The partitions Kafka accepted within `timeout_s`; what it did not answer in time counts as refused."""
        ...

    def committed(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]: ...


KafkaCommit = Callable[[Mapping[TopicPartition, int], float], set[TopicPartition]]
"""Commit within the timeout; the partitions Kafka accepted."""


def member_or_simple_commit(
    member: KafkaCommit, simple: KafkaCommit, clock: Callable[[], float] = time.monotonic
) -> KafkaCommit:
    """A commit for a bridge whose embedded member is in the Kafka group only at times (the pykafka dialect):
    through the member (with its generation while it has one), and what that did not take as a simple commit
    (generation -1, as pykafka's own members make), within one timeout. Not decided on the worker's view of
    the membership: that lags behind the member by the events the worker has not handled yet (it is releasing,
    say), and a commit sent the wrong way is refused (UNKNOWN_MEMBER_ID) for as long."""

    def commit(offsets: Mapping[TopicPartition, int], timeout_s: float) -> set[TopicPartition]:
        deadline = clock() + timeout_s
        try:
            accepted = member(offsets, timeout_s)
        except GenerationMoved:  # the member is between generations: pykafka's kind of commit may still land
            accepted = set()
        rest = {tp: o for tp, o in offsets.items() if tp not in accepted}
        left_s = deadline - clock()
        return accepted | (simple(rest, left_s) if rest and left_s > 0 else set())

    return commit


def retries_left(
    attempt: int,
    max_retries: int,
    now: float,
    backoff_s: float,
    deadline: float,
    *,
    releasing: bool,
    generation_moved: bool = False,
) -> bool:
    """Whether a refused Kafka commit is tried once more after `backoff_s`: never past `deadline`; within it, up
    to `max_retries` times, or as often as fits when `releasing` a partition whose next owner reads Kafka only
    (see the module docstring). `generation_moved`: a commit that releases nothing was refused for the
    member's generation; it cannot succeed before the member's next assignment, which waits for this worker,
    and the next commit carries its offsets, so it is not tried again."""
    if now + backoff_s >= deadline or generation_moved:
        return False
    return releasing or attempt < max_retries


def zookeeper_write_sent_only(kafka_first: bool, use_zk: bool) -> bool:
    """Whether a release's ZooKeeper offset writes may be only sent, not waited for: where Kafka is written
    first (`kafka_first`: a store, and the member has a generation) and ZooKeeper after it (dual commit).
    The next owner reads the larger of the two, and Kafka answered before the release goes on. Where
    ZooKeeper is the only store written, the next owner may read it before a write only sent is applied."""
    return kafka_first and use_zk


def zookeeper_writes(
    todo: Mapping[TopicPartition, int], accepted: Set[TopicPartition], *, releasing: bool
) -> dict[TopicPartition, int]:
    """What a dual commit writes to ZooKeeper once Kafka answered: what Kafka `accepted`; in a release, all of
    `todo`, since the owner node goes next and the next owner reads the larger of the two stores."""
    if releasing:
        return dict(todo)
    return {tp: o for tp, o in todo.items() if tp in accepted}


def merge_fetched(
    zk: Mapping[TopicPartition, int], kafka: Mapping[TopicPartition, int], use_zk: bool, use_kafka: bool
) -> dict[TopicPartition, int]:
    """The offset to resume from per partition; -1 where no store has one (then auto.offset.reset applies)."""
    keys = set(zk) | set(kafka)
    return {tp: max(zk.get(tp, -1) if use_zk else -1, kafka.get(tp, -1) if use_kafka else -1) for tp in keys}


class OffsetStore:
    def __init__(
        self,
        zk: ZkSession,
        paths: GroupPaths,
        storage: stores.OffsetStore,
        dual_commit: bool,
        kafka: KafkaOffsets | None,
        metrics: ConnectorMetrics,
        max_retries: int = 5,
        backoff_ms: int = 1000,
        kafka_available: Callable[[], bool] = lambda: True,
        commit_timeout_s: float = 10.0,
        durable_release: bool = False,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """`commit_timeout_s` bounds one Kafka commit, retries included (`offsets.channel.socket.timeout.ms`):
        the rebalance worker commits, and must go on answering ZooKeeper and mode events. `durable_release`: a
        release retries its Kafka commit for all of that time (Kafka-only stores, see the module docstring)."""
        self._zk = zk
        self._paths = paths
        self._use_kafka = storage is stores.OffsetStore.KAFKA and kafka is not None
        self._use_zk = storage is stores.OffsetStore.ZOOKEEPER or dual_commit or kafka is None
        self._kafka = kafka
        self._metrics = metrics
        self._retries = max_retries
        self._backoff_s = backoff_ms / 1000.0
        self._committed: dict[TopicPartition, int] = {}
        self._kafka_available = kafka_available
        self._commit_timeout_s = commit_timeout_s
        self._durable_release = durable_release and self._use_kafka and not self._use_zk
        self._clock = clock
        self._sleep = sleep
        """Owned by whoever knows (a bridge's `KafkaGroupTracker.coordinated`): Kafka refuses a commit
        without a generation, so while it is False only ZooKeeper is written."""
        self._unstored: dict[TopicPartition, int] = {}
        """Positions this member processed up to that no store took (see the module docstring)."""

    def commit(self, offsets: Mapping[TopicPartition, int], *, releasing: bool = False) -> bool:
        """Commit what changed since the last commit; True when every store took every partition. `releasing`:
        the caller deletes the partitions' owner nodes next (see `durable_release`)."""
        todo = self._changed(offsets)
        if not todo:
            return True
        accepted = set(todo)
        if self._use_kafka and self._kafka_available():
            accepted = self._commit_kafka(todo, releasing=releasing)
        elif self._use_kafka:
            self._metrics.committed("kafka", False)
        taken = {tp: todo[tp] for tp in accepted}
        written = zookeeper_writes(todo, accepted, releasing=releasing) if self._use_zk else {}
        if written and not self._write_zookeeper(written):
            self.remember({tp: o for tp, o in todo.items() if not self._use_kafka or tp not in accepted})
            return False
        self.remember({tp: o for tp, o in todo.items() if tp not in accepted and tp not in written})
        self._stored(taken | written)
        return accepted == set(todo)

    def _write_zookeeper(self, offsets: Mapping[TopicPartition, int]) -> bool:
        """Write `offsets` to ZooKeeper and wait for the replies; False (logged, counted) when that failed."""
        try:
            zk_offsets.write_offsets(self._zk, self._paths, offsets)
        except Exception:
            log.exception("ZooKeeper offset commit failed")
            self._metrics.committed("zookeeper", False)
            return False
        self._metrics.committed("zookeeper", True)
        return True

    def start_release_commit(self, offsets: Mapping[TopicPartition, int]) -> Callable[[], None]:
        """A release's commit (`commit(releasing=True)`) that leaves the ZooKeeper round trip out of the caller's
        path where Kafka took the offsets first (dual commit, `zookeeper_write_sent_only`): their ZooKeeper
        writes are only sent, ahead of the owner nodes' deletes, which ZooKeeper applies after them; the next
        owner reads max(ZooKeeper, Kafka), whose Kafka part holds them already. The returned function waits
        for the replies (a failure is logged, as a commit's; the offsets are in Kafka). What Kafka refused is
        written to ZooKeeper too (`zookeeper_writes`), and waited for here: Kafka cannot hand it over."""
        todo = self._changed(offsets)
        kafka_first = self._use_kafka and self._kafka_available()
        if not todo or not zookeeper_write_sent_only(kafka_first, self._use_zk):
            self.commit(offsets, releasing=True)
            return lambda: None
        accepted = self._commit_kafka(todo, releasing=True)
        written = zookeeper_writes(todo, accepted, releasing=True)
        refused = {tp: o for tp, o in written.items() if tp not in accepted}
        if refused and self._write_zookeeper(refused):  # awaited: Kafka has nothing to hand these over
            self._stored(refused)
        else:
            self.remember(refused)
        taken = {tp: todo[tp] for tp in accepted}
        self._stored(taken)
        if not taken:
            return lambda: None
        finish = zk_offsets.start_writing_offsets(self._zk, self._paths, taken, keep_newer=True)

        def settle() -> None:
            try:
                finish()
                self._metrics.committed("zookeeper", True)
            except Exception:
                log.exception("ZooKeeper offset commit of a release failed; the offsets are in Kafka")
                self._metrics.committed("zookeeper", False)

        return settle

    def _changed(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """The offsets to commit: those not committed already (a negative one is no position)."""
        return {tp: o for tp, o in offsets.items() if o >= 0 and self._committed.get(tp) != o}

    def _stored(self, offsets: Mapping[TopicPartition, int]) -> None:
        """`offsets` were taken by every store written: committed, and no longer this member's own to resume."""
        for tp, offset in offsets.items():
            self._committed[tp] = offset
            if self._unstored.get(tp, -1) <= offset:
                self._unstored.pop(tp, None)

    def remember(self, positions: Mapping[TopicPartition, int]) -> None:
        """Positions this member processed up to that no store took: it resumes from them if it gets those
        partitions back while the stores are behind (see the module docstring)."""
        for tp, offset in positions.items():
            if offset > max(self._unstored.get(tp, -1), self._committed.get(tp, -1)):
                self._unstored[tp] = offset

    def _commit_kafka(self, todo: Mapping[TopicPartition, int], *, releasing: bool) -> set[TopicPartition]:
        """Retries as `retries_left` allows, all within `commit_timeout_s`; a retry that could not start before
        then is not made. `releasing`: the owner nodes go next, so a refusal for the generation is retried too."""
        assert self._kafka is not None
        durable = releasing and self._durable_release
        deadline = self._clock() + self._commit_timeout_s
        accepted, moved = self._try_kafka(todo, self._commit_timeout_s)
        remaining = {tp: o for tp, o in todo.items() if tp not in accepted}
        attempt = 0
        while remaining and retries_left(
            attempt,
            self._retries,
            self._clock(),
            self._backoff_s,
            deadline,
            releasing=durable,
            generation_moved=moved and not releasing,
        ):
            attempt += 1
            self._sleep(self._backoff_s)
            more, moved = self._try_kafka(remaining, deadline - self._clock())
            accepted |= more
            remaining = {tp: o for tp, o in remaining.items() if tp not in accepted}
        self._metrics.committed("kafka", not remaining)
        if remaining and not moved:  # a refusal for the generation is logged by `_try_kafka`, and routine
            log.warning(
                "Kafka refused offsets of %d partitions (or did not take them within %gs); %s",
                len(remaining),
                self._commit_timeout_s,
                "the release writes them to ZooKeeper alone"
                if releasing and self._use_zk
                else "they are not written to ZooKeeper either",
            )
        return accepted

    def _try_kafka(self, todo: Mapping[TopicPartition, int], timeout_s: float) -> tuple[set[TopicPartition], bool]:
        """One Kafka commit: the partitions accepted, and whether it was refused for the member's generation."""
        assert self._kafka is not None
        try:
            return set(self._kafka.commit(todo, timeout_s)), False
        except GenerationMoved as refusal:
            log.info("%s; the next commit after the assignment takes these offsets", refusal)
            return set(), True

    def fetch(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        wanted = sorted(set(tps))
        zk_reads = zk_offsets.start_reading_offsets(self._zk, self._paths, wanted) if self._use_zk else dict
        kafka = self._kafka.committed(wanted) if self._use_kafka and self._kafka is not None else {}
        zk = zk_reads()  # the ZooKeeper round trip overlapped Kafka's
        merged = merge_fetched(zk, kafka, self._use_zk, self._use_kafka)
        for tp in wanted:
            merged.setdefault(tp, -1)
            if merged[tp] >= 0:
                self._committed[tp] = merged[tp]
            own = self._unstored.pop(tp, -1)
            if own > merged[tp]:  # left uncommitted in `_committed`, so the next commit stores it
                log.info("resuming %s at %d, where this member stopped; the offset stores hold %d", tp, own, merged[tp])
                merged[tp] = own
        return merged

    def forget(self, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            self._committed.pop(tp, None)
