"""In-memory stand-ins for the rebalance worker's and the Kafka group tracker's collaborators.

For the UNIT tests of that pure-ish logic only (tests/unit/test_worker.py, test_kafka_group.py): they let a
test drive the state machines event by event with a hand-moved clock. Everything that claims a behaviour of
ZooKeeper or Kafka is proved on the real cluster in tests/integration and tests/chaos, never with these.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

from confluent_kafka import KafkaError

from migrator.assign.model import ThreadId
from migrator.consumer.handoff import Handoff
from migrator.consumer.listener import ConsumerRebalanceListener
from migrator.coordination.kafka_group import KafkaGroupTracker
from migrator.coordination.offsets import KafkaOffsets, OffsetStore
from migrator.coordination.worker import RebalanceWorker, WorkerParts, WorkerSettings
from migrator.kafka.admin import KafkaUnavailable
from migrator.kafka.commit import GenerationMoved
from migrator.metrics import ConnectorMetrics
from migrator.protocol import stores
from migrator.protocol.codecs import ModeNode, PublishedAuthority, Registration
from migrator.protocol.kafka import KafkaGroup, KafkaGroupState, KafkaMember, RebalanceProtocol
from migrator.protocol.partition import TopicPartition
from migrator.zk.paths import GroupPaths
from migrator.zk.snapshot import Snapshot

GROUP = "g"


class FakeClock:
    """Monotonic seconds that move only when a test says so."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class RefusingKafka:
    """Kafka offsets refusing the first `refusals` commits, each answered after `round_trip_s` on `clock`: by
    accepting none (a generation-less commit while the group has a member), or with `GenerationMoved` (a
    member's commit during a rebalance, REBALANCE_IN_PROGRESS)."""

    def __init__(
        self, clock: FakeClock, refusals: int, *, generation_moved: bool = False, round_trip_s: float = 0.05
    ) -> None:
        self.clock = clock
        self.refusals = refusals
        self.generation_moved = generation_moved
        self.round_trip_s = round_trip_s
        self.attempts = 0
        self.stored: dict[TopicPartition, int] = {}

    def commit(self, offsets: Mapping[TopicPartition, int], timeout_s: float) -> set[TopicPartition]:
        self.attempts += 1
        self.clock.advance(self.round_trip_s)
        if self.refusals:
            self.refusals -= 1
            if self.generation_moved:
                raise GenerationMoved(KafkaError.REBALANCE_IN_PROGRESS)
            return set()
        self.stored.update(offsets)
        return set(offsets)

    def committed(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.stored[tp] for tp in tps if tp in self.stored}


def kafka_only_store(
    kafka: KafkaOffsets, clock: FakeClock, *, durable_release: bool, dual_commit: bool = False
) -> OffsetStore:
    """An offset store over `kafka` alone (ZooKeeper is not touched), on `clock`: 5 retries 200 ms apart within
    a 10 s commit timeout."""
    return OffsetStore(
        cast(Any, None),
        GroupPaths("g"),
        stores.OffsetStore.KAFKA,
        dual_commit,
        kafka,
        ConnectorMetrics("g", "c"),
        max_retries=5,
        backoff_ms=200,
        commit_timeout_s=10.0,
        durable_release=durable_release,
        clock=clock,
        sleep=clock.advance,
    )


def snapshot(
    members: Mapping[str, Mapping[str, int]],
    *,
    bridges: Iterable[str] = (),
    mode: bytes | None = None,
    partitions: Mapping[str, tuple[int, ...]] | None = None,
) -> Snapshot:
    """A group's snapshot: consumerId -> static subscription; every topic has partitions 0..3 unless told."""
    topics = {t for sub in members.values() for t in sub}
    return Snapshot(
        {cid: Registration(dict(sub)) for cid, sub in members.items()},
        frozenset(bridges),
        ModeNode.absent() if mode is None else ModeNode.decode(mode),
        members,
        partitions if partitions is not None else {t: (0, 1, 2, 3) for t in topics},
    )


class FakeSnapshots:
    """What ZooKeeper holds for the group, as `SnapshotReader` reads it; counts full, mode and member reads."""

    mode_path = f"/consumers/{GROUP}/migration/mode"

    def __init__(self, current: Snapshot) -> None:
        self.current = current
        self.reads = 0
        self.mode_reads = 0
        self.member_reads = 0

    def read(self) -> Snapshot:
        self.reads += 1
        return self.current

    def refresh_mode(self, last: Snapshot) -> Snapshot:
        self.mode_reads += 1
        return replace(last, mode=self.current.mode)

    def read_members(self, last: Snapshot) -> Snapshot | None:
        """What a read of the changed members finds: the group as it is now (None: no listing to start from)."""
        if last.ids is None:
            return None
        self.member_reads += 1
        return self.current


@dataclass
class FakeRegistry:
    registered: bool = False
    published: list[PublishedAuthority] = field(default_factory=list)

    def register(self, registration: Registration) -> None:
        self.registered = True

    def deregister(self) -> None:
        self.registered = False

    def publish(self, authority: PublishedAuthority) -> None:
        self.published.append(authority)


class FakeWatches:
    def start(self) -> None: ...

    def stop(self) -> None: ...

    def watch_topics(self, topics: Iterable[str], wildcard: bool) -> None: ...


class FakeHoldings:
    """Ownership without owner nodes: `conflicts` claims are refused before one succeeds."""

    def __init__(self) -> None:
        self.owned: dict[TopicPartition, ThreadId] = {}
        self.listener = ConsumerRebalanceListener()
        self.conflicts = 0
        self.released: list[tuple[set[TopicPartition], str]] = []
        self.claims = 0
        self.waited_first: list[bool] = []

    def take_laps(self) -> dict[str, float]:
        return {}

    def positions(self) -> dict[TopicPartition, int]:
        return {tp: 7 for tp in self.owned}

    def release(
        self,
        release: Mapping[TopicPartition, ThreadId],
        why: str,
        in_flight_wait_s: float = 0.0,
        tell_listener: bool = True,
        before_delete: Callable[[], None] | None = None,
        await_delete: bool = True,
    ) -> None:
        if before_delete is not None:
            before_delete()
        self.released.append((set(release), why))
        self.owned = {tp: th for tp, th in self.owned.items() if tp not in release}

    def move(self, moves: Mapping[TopicPartition, ThreadId]) -> None:
        self.owned.update(moves)

    def claim(self, claim: Mapping[TopicPartition, ThreadId], *, wait_first: bool = True) -> bool:
        self.claims += 1
        self.waited_first.append(wait_first)
        if self.conflicts:
            self.conflicts -= 1
            return False
        self.owned.update(claim)
        return True

    def drop_all(self) -> int:
        lost = len(self.owned)
        self.owned.clear()
        return lost


@dataclass
class FakeOffsets:
    commits: list[dict[TopicPartition, int]] = field(default_factory=list)

    def commit(self, offsets: Mapping[TopicPartition, int], *, releasing: bool = False) -> bool:
        self.commits.append(dict(offsets))
        return True


class FakeMember:
    """The embedded member as the worker and the tracker see it (its events are posted by the test)."""

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self.subscribed: list[str] | None = None
        self.left = False
        self.protocol = RebalanceProtocol.EAGER

    def member_id(self) -> str:
        return f"{self.client_id}-m"

    def subscribe(self, topics: list[str]) -> None:
        self.subscribed = list(topics)

    def leave(self) -> None:
        self.left = True

    def wait_left(self, timeout_s: float) -> bool:
        return self.left


class FakeAdmin:
    """DescribeGroups answers from `members` (client id -> partitions) until `down`; counts the describes."""

    def __init__(self, members: Mapping[str, tuple[TopicPartition, ...]] | None = None, state: str = "Stable") -> None:
        self.members = dict(members or {})
        self.state = state
        self.down = False
        self.describes = 0

    def describe_group(self, group: str) -> KafkaGroup:
        self.describes += 1
        if self.down:
            raise KafkaUnavailable("DescribeGroups: all brokers down")
        described = tuple(KafkaMember(f"{c}-m", c, "/127.0.0.1", None, tps) for c, tps in self.members.items())
        return KafkaGroup(group, KafkaGroupState.from_name(self.state), "range", described)

    def log_end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: 10 for tp in tps}


def tracker(member: FakeMember, admin: FakeAdmin | None, clock: FakeClock) -> KafkaGroupTracker:
    return KafkaGroupTracker(GROUP, member.client_id, cast(Any, member), cast(Any, admin), clock=clock)


@dataclass
class Rig:
    """A worker over fakes, driven with `step` and a hand-moved clock."""

    worker: RebalanceWorker
    clock: FakeClock
    snapshots: FakeSnapshots
    registry: FakeRegistry
    holdings: FakeHoldings
    offsets: FakeOffsets
    member: FakeMember | None
    admin: FakeAdmin | None
    handoff: Handoff


def rig(
    consumer_id: str,
    current: Snapshot,
    *,
    bridge: bool = False,
    admin: FakeAdmin | None = None,
    max_retries: int = 2,
    auto_commit_interval_ms: int | None = None,
) -> Rig:
    clock = FakeClock()
    snapshots, registry, holdings, offsets = FakeSnapshots(current), FakeRegistry(), FakeHoldings(), FakeOffsets()
    handoff = Handoff()
    member = FakeMember(consumer_id) if bridge else None
    admin = admin if admin is not None else FakeAdmin()
    parts = WorkerParts(
        snapshots=cast(Any, snapshots),
        registry=cast(Any, registry),
        watches=cast(Any, FakeWatches()),
        holdings=cast(Any, holdings),
        offsets=cast(Any, offsets),
        handoff=handoff,
        metrics=ConnectorMetrics(GROUP, consumer_id),
        kafka=tracker(member, admin, clock) if member is not None else None,
        admin=cast(Any, admin),
        clock=clock,
    )
    settings = WorkerSettings(
        consumer_id=consumer_id,
        strategy="range",
        max_retries=max_retries,
        backoff_ms=1,
        auto_commit_interval_ms=auto_commit_interval_ms,
        bootstrap_servers="127.0.0.1:9092" if bridge else "",
    )
    worker = RebalanceWorker(settings=settings, registration=current.registrations[consumer_id], parts=parts)
    worker.register()
    return Rig(worker, clock, snapshots, registry, holdings, offsets, member, admin, handoff)
