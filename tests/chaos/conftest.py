"""Chaos-only fixtures: `drill`, one harness per fault drill.

A drill is always the same three acts around a different fault: start a loaded group under the independent
observer (a `ProcessingLog` written by the application threads and a read-only `OwnersWatcher`), inject the
fault, then prove that the group consumes records produced *after* the fault and that the verdict over the
whole run holds (CONTRACT §6). Keeping the acts here means each drill file only says what its fault is and
what it may excuse (duplicates after a crash, above the dead member's last commit).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo.exceptions import KazooException, NoNodeError

from migrator.observe import (
    Duplicate,
    JsonlTail,
    Overlap,
    OwnersWatcher,
    OwnerViolation,
    Processed,
    ProcessingLog,
    Verdict,
    judge,
    load_many,
)
from migrator.zk.paths import GroupPaths
from tests.helpers.bridge import bridge_props, owners, published, set_mode, wait_converged
from tests.helpers.cluster import restart_process
from tests.helpers.kafka import high_watermarks, make_topic
from tests.helpers.member_proc import MemberProcess
from tests.helpers.pykafka_peer import ConfluentMember
from tests.helpers.wait import wait_until
from tests.helpers.workload import Member, SequencedProducer
from tests.helpers.zk import zk_client

PARTITIONS = 8
STREAMS = 2
RATE = 300.0
# Member processes log with times from this level on to their `.stderr` file, kept in pytest's basetemp: what a
# failed drill leaves to read. MIGRATOR_TEST_LOG_LEVEL=DEBUG for more.
MEMBER_LOG_LEVEL = os.environ.get("MIGRATOR_TEST_LOG_LEVEL", "INFO")


@dataclass(frozen=True)
class Outage:
    """When a drill's fault process was down (wall clock, to compare with processed records) and when it was
    ready again (monotonic, where the drill's resumption bound starts)."""

    stopped_ns: int
    restart_ns: int  # when the restart began: the process was down from stopped_ns to here
    restart_s: float  # how long the process took to be ready again
    ready_at: float

    @property
    def down_s(self) -> float:
        return (self.restart_ns - self.stopped_ns) / 1e9

    def since_ready(self) -> float:
        return time.monotonic() - self.ready_at


class Drill:
    """The workload, the members and the observer of one drill; everything it starts is stopped by the fixture."""

    def __init__(self, cluster: Any, group: str, topic: str, tmp_path: Path) -> None:
        self.cluster = cluster
        self.group = group
        self.topic = topic
        self.paths = GroupPaths(group)
        self.log = ProcessingLog()
        self.members: dict[str, Member] = {}
        self.procs: dict[str, MemberProcess] = {}
        self.proc_logs: list[Path] = []
        self._tails: list[JsonlTail] = []
        self._tailed: list[Processed] = []
        self._tmp = tmp_path
        self.partitions = PARTITIONS
        self._closing = contextlib.ExitStack()
        self.zk = self._closing.enter_context(zk_client(cluster))
        self.watcher: OwnersWatcher | None = None
        self.producer: SequencedProducer | None = None
        self.started_at = time.monotonic()

    # -- act 1: a loaded group under observation -------------------------------------------------------
    def start(self, partitions: int = PARTITIONS, replication: int = 1, rate: float = RATE) -> Drill:
        self.partitions = partitions
        make_topic(self.cluster, self.topic, partitions, replication=replication)
        self.watcher = OwnersWatcher(self.cluster.zookeeper, self.group).start()
        self.producer = SequencedProducer(self.cluster, self.topic, rate=rate).start()
        return self

    def cid(self, name: str) -> str:
        return f"{self.group}_{name}"

    def bridge(self, name: str, streams: int = STREAMS, **props: str) -> Member:
        props = {**bridge_props(self.cluster.bootstrap_servers), **props}
        member = Member(self.cluster.zookeeper, self.group, name, {self.topic: streams}, self.log, **props)
        self.members[name] = member
        return member

    def legacy(self, name: str, streams: int = STREAMS) -> Member:
        member = Member(self.cluster.zookeeper, self.group, name, {self.topic: streams}, self.log)
        self.members[name] = member
        return member

    def spawn_bridge(self, name: str, streams: int = STREAMS, **props: str) -> MemberProcess:
        """A bridge in its own process (an app on the public API, tests.helpers.member_proc), logging to a JSONL
        file: for `kill -9`, and for faults that could kill the process (a test thread cannot survive them)."""
        return self.spawn(name, {**bridge_props(self.cluster.bootstrap_servers), **props}, streams)

    def spawn_settled(self, names: Iterable[str]) -> list[str]:
        """Bridge processes `names`, the mode set to `kafka`, and the group settled under Kafka authority: where
        most drills begin. Returns the names."""
        names = list(names)
        for name in names:
            self.spawn_bridge(name)
        set_mode(self.zk, self.group, "kafka")
        self.settle("kafka", names)
        return names

    def spawn(
        self,
        name: str,
        props: Mapping[str, str],
        streams: int = STREAMS,
        ready_timeout_s: float = 60.0,
        zookeeper: str | None = None,
    ) -> MemberProcess:
        """A member in its own process with exactly `props` (a legacy connector unless they enable migration).
        A name may be spawned again after `leave` or `kill` (a redeploy): each process logs to its own file.
        `zookeeper` overrides the cluster's connect string (e.g. a `SilentProxy` in front of it)."""
        path = self._next_log(name)
        proc = MemberProcess(zookeeper or self.cluster.zookeeper, self.group, self.topic, name, path, streams, props,
                             ready_timeout_s=ready_timeout_s, log_level=MEMBER_LOG_LEVEL)  # fmt: skip
        return self._track(name, path, proc)

    def _next_log(self, name: str) -> Path:
        return self._tmp / f"{self.group}.{name}.{len(self.proc_logs)}.jsonl"

    def _track(self, name: str, path: Path, proc: MemberProcess) -> MemberProcess:
        """Judge `proc`'s processing log with the rest; `leave`, `kill` and teardown stop it."""
        self.procs[name] = proc
        self.proc_logs.append(path)
        self._tails.append(JsonlTail(path))
        return proc

    def plain(self, name: str, strategy: str = "range", instance_id: str = "") -> MemberProcess:
        """A plain confluent-kafka consumer in its own process (`tests/peers/confluent_member.py`), client.id
        `name`, judged with the members: a team's replacement for the bridges; static with `instance_id`."""
        path = self._next_log(name)
        return self._track(name, path, ConfluentMember(self.cluster.bootstrap_servers, self.group, self.topic, name,
                                                       path, strategy, instance_id))  # fmt: skip

    def assert_alive(self) -> None:
        """No member process died (only `kill` ends one on purpose, and it forgets it first)."""
        dead = [d for d in (p.death() for p in self.procs.values()) if d]
        assert not dead, f"member processes died: {dead}"

    def outage(
        self,
        process: str | list[str],
        down_s: float,
        alongside: Iterable[Drill] = (),
        while_down: Callable[[], object] | None = None,
        kill: bool = False,
    ) -> Outage:
        """Stop a cluster process, keep it down for `down_s` while checking that every member process (of this
        drill and of the drills `alongside` it on the same cluster) stays alive, and start it again (on its old
        port and data). Members are checked again after the restart: librdkafka's abort came when the broker
        was back. `while_down` runs once, right after the stop (what the group must achieve without that
        process); if it takes longer than `down_s`, the outage lasts as long. Several processes go down and
        come back together (e.g. two of three ZooKeeper servers); `kill=True` stops them with SIGKILL."""
        drills = [self, *alongside]
        processes = [process] if isinstance(process, str) else process
        for name in processes:
            self.cluster.stop_process(name, kill=kill)
        stopped_ns, down_until = time.time_ns(), time.monotonic() + down_s
        if while_down is not None:
            while_down()
        while time.monotonic() < down_until:
            for d in drills:
                d.assert_alive()
            time.sleep(min(0.5, max(0.0, down_until - time.monotonic())))
        up_ns, began = time.time_ns(), time.monotonic()
        for name in processes:
            for failure in restart_process(self.cluster, name):
                print(f"\n{self.group}: restarted {name} again: {failure}")
        outage = Outage(stopped_ns, up_ns, time.monotonic() - began, time.monotonic())
        for d in drills:
            d.assert_alive()
            # the drill's own client may have lost its session to a long ZooKeeper outage: kazoo opens a new one
            wait_until(d._zk_answers, 60, what="the drill's ZooKeeper client to reconnect")
        return outage

    def _zk_answers(self) -> bool:
        try:
            return self.zk.exists("/") is not None
        except KazooException:
            return False

    def leave(self, name: str) -> None:
        """A clean leave: in-process members shut down, processes get SIGTERM and must exit 0."""
        if name in self.members:
            self.members.pop(name).shutdown()
            return
        proc = self.procs.pop(name)
        code = proc.stop(60)
        assert code == 0, f"bridge process {name} did not stop cleanly: {proc.death() or 'still running after 60s'}"

    def kill(self, name: str) -> None:
        self.procs.pop(name).kill()

    # -- reading ZooKeeper -------------------------------------------------------------------------------
    def owners(self) -> dict[int, str]:
        return owners(self.zk, self.group, self.topic)

    def published(self) -> dict[str, Any]:
        return published(self.zk, self.group)

    def converge(self, authority: str, names: Iterable[str], timeout: float = 45.0, legacy: Iterable[str] = ()) -> None:
        """Every named bridge publishes `authority` and every partition is owned by a named bridge or by one of
        the `legacy` connectors (which publish nothing)."""
        cids = {self.cid(n) for n in names}
        everyone = cids | {self.cid(n) for n in legacy}
        try:
            wait_converged(self.zk, self.group, self.topic, self.partitions, authority, cids, timeout=timeout)
            wait_until(lambda: {th.rsplit("-", 1)[0] for th in self.owners().values()} <= everyone, timeout,
                       what=f"only {sorted(everyone)} own partitions")  # fmt: skip
        except AssertionError:
            self.assert_alive()  # a member that died is the finding, not the timeout it caused
            raise

    def settle(
        self,
        authority: str,
        names: Iterable[str],
        quiet_s: float = 2.0,
        timeout: float = 45.0,
        legacy: Iterable[str] = (),
    ) -> None:
        """`converge`, then stay converged without a single owner change for `quiet_s`: after a burst of
        changes a bridge may briefly publish the final authority from an older event it has not finished
        reacting to. (Generations are not compared: a bridge may re-publish the same decision.)"""
        names = list(names)
        deadline = time.monotonic() + timeout

        def converged_and_quiet() -> bool:
            self.converge(authority, names, max(1.0, deadline - time.monotonic()), legacy)
            owners_then, quiet_until = self.owners(), time.monotonic() + quiet_s
            while time.monotonic() < quiet_until:  # not a wait: it must hold throughout
                pub = self.published()
                if self.owners() != owners_then or any(
                    self.cid(n) not in pub or pub[self.cid(n)].authority.value != authority for n in names
                ):
                    return False
                time.sleep(0.1)
            return True

        wait_until(converged_and_quiet, timeout, interval=0, what=f"{names} to settle under {authority}")

    def committed(self, partitions: Iterable[int]) -> dict[int, int]:
        """The ZooKeeper offsets of `partitions` now (0 where none): a lower bound of the last commit, since a
        bridge commits to Kafka first and resumes from the larger of the two."""
        out = {}
        for p in partitions:
            try:
                out[p] = int(self.zk.get(self.paths.offset(self.topic, p))[0])
            except NoNodeError:
                out[p] = 0
        return out

    def owned_by(self, name: str) -> set[int]:
        prefix = f"{self.cid(name)}-"
        return {p for p, th in self.owners().items() if th.startswith(prefix)}

    # -- act 3: resumption and the verdict ---------------------------------------------------------------
    def records(self) -> list[Processed]:
        """Everything processed so far, for polling: member processes' logs are read incrementally."""
        for tail in self._tails:
            self._tailed.extend(tail.read())
        return self.log.records() + self._tailed

    def high_watermarks(self) -> dict[int, int]:
        return high_watermarks(self.cluster.bootstrap_servers, self.topic, self.partitions)

    def resumes(self, timeout: float = 40.0) -> float:
        """Wait until every partition has processed a record produced after this call; return the seconds."""
        marks = self.high_watermarks()
        return self.processes({p: mark + 1 for p, mark in marks.items()}, timeout,
                              "records produced after the fault to be processed")  # fmt: skip

    def processes(self, below: Mapping[int, int], timeout: float, what: str) -> float:
        """Wait until every partition `p` has processed offset `below[p] - 1` (the last record below that mark,
        e.g. a high watermark); return the seconds. On a timeout, say which partitions lag and what the producer
        had acknowledged there: a partition nobody produced to cannot be consumed either."""
        began = time.monotonic()

        def newest() -> dict[int, int]:
            out: dict[int, int] = {}
            for r in self.records():
                if r.topic == self.topic:
                    out[r.partition] = max(out.get(r.partition, -1), r.offset)
            return out

        def caught_up() -> bool:
            self.assert_alive()
            now = newest()
            return all(now.get(p, -1) >= mark - 1 for p, mark in below.items())

        try:
            wait_until(caught_up, timeout, interval=0.2, what=what)
        except AssertionError as exc:
            now = newest()
            acked = {p: max((o for _t, q, o in self._produced_now() if q == p), default=-1) for p in below}
            lagging = {p: f"processed {now.get(p, -1)}, needed {mark - 1}, acked {acked[p]}"
                       for p, mark in below.items() if now.get(p, -1) < mark - 1}  # fmt: skip
            raise AssertionError(f"{exc}; lagging partitions: {lagging}") from None
        return time.monotonic() - began

    def _produced_now(self) -> set[tuple[str, int, int]]:
        if self.producer is None:
            return set()
        with self.producer._lock:
            return set(self.producer.produced)

    def finish(
        self,
        allow_duplicate: Callable[[Duplicate], bool] | None = None,
        drain_s: float = 60.0,
        excuse_violation: Callable[[OwnerViolation], bool] | None = None,
        excuse_overlap: Callable[[Overlap], bool] | None = None,
    ) -> Verdict:
        """Stop producing, wait for every record, stop everyone cleanly, and judge the whole run; the owner
        violations `excuse_violation` accepts, and the overlaps `excuse_overlap` accepts, are left out of the
        verdict (the drill counts them itself)."""
        assert self.producer is not None and self.watcher is not None, "start() first"
        # After a broker restart, acks=all requests wait for the ISR to shrink or the broker to catch up
        # (replica.lag.time.max.ms is 30 s): give deliveries longer than the default 30 s.
        self.assert_alive()
        produced = self.producer.stop(flush_timeout_s=120.0)
        self.producer = None
        wait_until(lambda: produced <= {r.key for r in self.records()}, drain_s, interval=0.2,
                   what="every produced record processed")  # fmt: skip
        for name in list(self.members) + list(self.procs):
            self.leave(name)
        self.watcher.stop()
        processed = self.log.records() + load_many(self.proc_logs)  # whole files: a torn last line included
        verdict = judge(produced, processed, self.watcher.intervals(), allow_duplicate=allow_duplicate)
        if excuse_violation is not None:
            kept = [v for v in verdict.owner_violations if not excuse_violation(v)]
            verdict = dataclasses.replace(verdict, owner_violations=kept)
        if excuse_overlap is not None:
            verdict = dataclasses.replace(verdict, overlaps=[o for o in verdict.overlaps if not excuse_overlap(o)])
        print(f"\n{self.group}: {verdict.summary()}; {time.monotonic() - self.started_at:.1f}s")
        assert verdict.ok, verdict.summary()
        return verdict

    def close(self) -> None:
        """Teardown, whatever the drill did: nothing it started may outlive it."""
        for proc in self.procs.values():
            if proc.alive():
                proc.kill()
        for member in self.members.values():
            with contextlib.suppress(Exception):
                member.shutdown()
        if self.producer is not None:
            with contextlib.suppress(Exception):
                self.producer.stop()
        if self.watcher is not None:
            with contextlib.suppress(Exception):
                self.watcher.stop()
        self._closing.close()


def without_zookeeper(
    drills: Mapping[str, Drill],
    names: list[str],
    processes: str | list[str],
    down_s: float,
    grace_ns: int,
    resume_bound_s: float,
) -> tuple[Outage, dict[str, dict[int, int]]]:
    """ZooKeeper unavailable to `drills` (keyed by authority, on one cluster) for `down_s`, by stopping `processes`.
    No bridge may hand out a record from `grace_ns` after the stop until the restart; then every group must be
    back under its authority and consume new records within `resume_bound_s`. Returns the outage and the offsets
    committed at the stop, the floor of the duplicates a session expiry may cause (`after_commit`)."""
    first, *others = drills.values()
    committed = {authority: d.committed(range(d.partitions)) for authority, d in drills.items()}
    outage = first.outage(processes, down_s, alongside=others)
    for authority, d in drills.items():
        during = [r for r in d.records() if outage.stopped_ns + grace_ns <= r.start_ns <= outage.restart_ns]
        assert not during, f"{authority}: {len(during)} records handed out without ZooKeeper: {during[:3]}"
    for authority, d in drills.items():
        d.converge(authority, names, timeout=resume_bound_s)
    for d in drills.values():
        d.resumes(timeout=max(1.0, resume_bound_s - outage.since_ready()))
    return outage, committed


@pytest.fixture
def drill(cluster: Any, unique_group: str, unique_topic: str, tmp_path: Path) -> Iterator[Drill]:
    """A drill on the shared session cluster."""
    d = Drill(cluster, unique_group, unique_topic, tmp_path)
    try:
        yield d
    finally:
        d.close()


@pytest.fixture
def drill_on(
    cluster_factory: Callable[..., Any], unique_group: str, unique_topic: str, tmp_path: Path
) -> Iterator[Callable[..., Drill]]:
    """A drill on a dedicated cluster, for faults the shared cluster must not see: `drill_on(brokers=3)`.
    `drill_on(alongside=d)` is a second group and topic on `d`'s cluster, so one fault (and its cost) serves
    two groups, e.g. one in each mode. It depends on `cluster_factory`, so the drills' members stop before
    their cluster is downed."""
    made: list[Drill] = []

    def make(
        brokers: int = 1,
        group_max_size: int | None = None,
        extra_broker_config: Mapping[str, object] | None = None,
        alongside: Drill | None = None,
        **cluster_options: Any,
    ) -> Drill:
        if alongside is not None:
            n = len(made)
            d = Drill(alongside.cluster, f"{unique_group}-{n}", f"{unique_topic}-{n}", tmp_path)
        else:
            cluster = cluster_factory(brokers=brokers, group_max_size=group_max_size,
                                      extra_broker_config=extra_broker_config, **cluster_options)  # fmt: skip
            d = Drill(cluster, unique_group, unique_topic, tmp_path)
        made.append(d)
        return d

    try:
        yield make
    finally:
        for d in made:
            d.close()


@pytest.fixture
def both_modes(drill_on: Callable[..., Drill]) -> Callable[..., dict[str, Drill]]:
    """`both_modes(names, rate)`: two loaded groups on one dedicated cluster, keyed by the authority each obeys,
    each with the bridges `names` in their own processes, settled, and every bridge past its first commit. One
    fault of that cluster (`drills["kafka"].outage(..., alongside=[drills["zookeeper"]])`) serves both.
    Keyword arguments choose the cluster (`zookeepers=3`, `broker_proxies=True`: `DevCluster.start`)."""

    def make(names: list[str], rate: float, **cluster_options: Any) -> dict[str, Drill]:
        kafka = drill_on(**cluster_options)
        drills = {"kafka": kafka, "zookeeper": drill_on(alongside=kafka)}
        for d in drills.values():
            d.start(rate=rate)
            for name in names:
                d.spawn_bridge(name)
        set_mode(kafka.zk, kafka.group, "kafka")
        for authority, d in drills.items():
            d.settle(authority, names)
        time.sleep(1.5)  # every bridge processes and commits at least once
        return drills

    return make
