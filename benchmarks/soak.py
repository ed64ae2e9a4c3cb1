"""A soak run: random faults under load on a 3-broker cluster, judged by the independent observer.

    python -m benchmarks.soak --minutes 20 [--seed 1]      # writes benchmarks/results/soak.json

A group of bridges, each in its own process (`tests.helpers.member_proc`, an app on the public API), consumes
a topic replicated three times while a seeded sequence of faults hits it one at a time: a broker stopped for
5-30 s, a broker gone silent for 5-30 s (its `SilentProxy` stops forwarding without closing a socket),
ZooKeeper stopped for 1-3 s (below the bridges' 4 s session timeout), one member cut from ZooKeeper by a
silent partition for 6-12 s (past its session timeout: its session expires, the others take over), the mode
flipped with `migrator set-mode` as an operator would, and a member killed with `kill -9` and restarted
1-5 s later. Every broker and every member's ZooKeeper connection goes through a proxy for that.
After each fault the run waits (up to `recovery_bound_s`) until every partition processes a record produced
after the fault ended, and records how long that took. At the end production stops, every record must be
processed, every member must stop cleanly on SIGTERM, and the verdict must find nothing lost, no dual
processing, and duplicates only where a member was killed, cut from ZooKeeper or its ZooKeeper session
expired, above its last commit. A member process that dies on its own is a crash: it is recorded (exit
status and last stderr lines) and restarted. Besides the partition, a starved host can expire a 4 s session
too; every expiry is seen in ZooKeeper (the member's `ids` node re-created by another session of the same
process) and reported, with the duplicates it excuses.

The fault sequence is drawn from `--seed`; the timing of each fault is the host's, so two runs with one seed
inject the same faults but need not interleave them with the group's rebalances identically. The chaos test
`tests/chaos/test_soak.py` runs this code for 3 minutes in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from benchmarks.common import save, unique
from migrator.demo.workload import SequencedProducer, bridge_props, quiet_libraries
from migrator.devcluster import DevCluster
from migrator.devcluster.proxy import SilentProxy
from migrator.errors import EXIT_OK, EXIT_REFUSED, EnvironmentProblem
from migrator.observe import Duplicate, JsonlTail, OwnersWatcher, after_commit, judge, load_many
from migrator.zk.group_reader import read_group
from migrator.zk.paths import GroupPaths
from tests.helpers.cluster import restart_process
from tests.helpers.kafka import high_watermarks
from tests.helpers.member_proc import MemberProcess

ROOT = Path(__file__).resolve().parents[1]

REPLICATED = {"offsets.topic.replication.factor": 3, "offsets.topic.num.partitions": 4}
HELD_EVERY_S = 2.0  # how often the soak notes what each member owns, for the excuse of a session expiry
LOOK_TIMEOUT_S = 2.0  # a look at ZooKeeper between faults gives up after this (ZooKeeper may be stopping)


class FaultKind(Enum):
    BROKER = "broker stop/start"
    ZOOKEEPER = "zookeeper stop/start"
    MODE_FLIP = "mode flip"
    KILL_MEMBER = "kill -9 and restart of a member"
    BROKER_SILENT = "broker silent"
    ZOOKEEPER_PARTITION = "member cut from zookeeper (silent)"


@dataclass(frozen=True)
class SoakConfig:
    minutes: float
    seed: int = 1
    brokers: int = 3
    members: int = 4
    streams: int = 2
    partitions: int = 12
    rate: float = 200.0
    broker_down_s: tuple[float, float] = (5.0, 30.0)
    zookeeper_down_s: tuple[float, float] = (1.0, 3.0)
    restart_after_s: tuple[float, float] = (1.0, 5.0)
    partition_s: tuple[float, float] = (6.0, 12.0)  # past the members' 4 s ZooKeeper session timeout
    gap_s: tuple[float, float] = (2.0, 8.0)
    recovery_bound_s: float = 90.0
    weights: tuple[tuple[FaultKind, int], ...] = (
        (FaultKind.BROKER, 3),
        (FaultKind.ZOOKEEPER, 1),
        (FaultKind.MODE_FLIP, 2),
        (FaultKind.KILL_MEMBER, 2),
        (FaultKind.BROKER_SILENT, 2),
        (FaultKind.ZOOKEEPER_PARTITION, 1),
    )


@dataclass(frozen=True)
class Fault:
    """One fault drawn from the seed: what, on what, and for how long (a downtime or a restart delay)."""

    kind: FaultKind
    target: str
    seconds: float


def draw_fault(rng: random.Random, config: SoakConfig, mode: str) -> Fault:
    """The next fault, from the seeded generator only (pure given its state): the sequence is the seed's."""
    kinds, weights = zip(*config.weights, strict=True)
    kind = rng.choices(kinds, weights)[0]
    if kind in (FaultKind.BROKER, FaultKind.BROKER_SILENT):
        return Fault(kind, f"broker-{rng.randint(1, config.brokers)}", rng.uniform(*config.broker_down_s))
    if kind is FaultKind.ZOOKEEPER_PARTITION:
        return Fault(kind, f"m{rng.randrange(config.members)}", rng.uniform(*config.partition_s))
    if kind is FaultKind.ZOOKEEPER:
        return Fault(kind, "zookeeper", rng.uniform(*config.zookeeper_down_s))
    if kind is FaultKind.MODE_FLIP:
        return Fault(kind, "zookeeper" if mode == "kafka" else "kafka", 0.0)
    return Fault(kind, f"m{rng.randrange(config.members)}", rng.uniform(*config.restart_after_s))


@dataclass
class FaultRecord:
    at_s: float
    kind: str
    target: str
    seconds: float
    outcome: str = "injected"  # or "refused: <the preflight's first reason>"
    recovered_s: float | None = None  # fault over -> every partition processed a record produced after it


@dataclass
class Soak:
    """The running soak: cluster, load, members and observer; `close` stops whatever is still running."""

    config: SoakConfig
    workdir: Path
    cluster: DevCluster
    group: str = field(default_factory=lambda: unique("soak"))
    topic: str = field(default_factory=lambda: unique("soak-t"))
    mode: str = "zookeeper"
    members: dict[str, MemberProcess] = field(default_factory=dict)
    logs: list[Path] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    excuses: list[Callable[[Duplicate], bool]] = field(default_factory=list)
    expiry_excuses: list[Callable[[Duplicate], bool]] = field(default_factory=list)
    session_expiries: list[str] = field(default_factory=list)  # "<when>: <member>@<pid>", seen in ZooKeeper
    faults: list[FaultRecord] = field(default_factory=list)
    unclean_stops: list[str] = field(default_factory=list)
    restart_failures: list[str] = field(default_factory=list)  # cluster processes that failed to start again
    aborted: str = ""  # why the fault loop ended early (a cluster process that would not start again)
    began: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.zk = KazooClient(hosts=self.cluster.zookeeper, timeout=10.0)
        self.zk.start(timeout=30.0)
        self.paths = GroupPaths(self.group)
        self._tails: list[JsonlTail] = []
        self._newest: dict[int, int] = {}
        self._processed: set[tuple[str, int, int]] = set()
        self.producer: SequencedProducer | None = None
        self.watcher: OwnersWatcher | None = None
        self._sessions: dict[str, tuple[int, int]] = {}  # member -> (pid, session of its ids node)
        self._held: dict[str, dict[int, int]] = {}  # member -> what it owned at the last look, with ZK offsets
        self._held_due = 0.0
        self._spawned_ms: dict[str, int] = {}  # member -> when its current process was started (wall clock)
        self._zk_proxies: dict[str, SilentProxy] = {}  # member -> the proxy its ZooKeeper connection goes through

    # -- setting up ------------------------------------------------------------------------------------
    def start(self) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.cluster.bootstrap_servers})
        admin.create_topics([NewTopic(self.topic, self.config.partitions, 3)])[self.topic].result(30)
        self._wait(lambda: self._topic_ready(admin), 60, "the topic's leaders")
        self.watcher = OwnersWatcher(self.cluster.zookeeper, self.group).start()
        self.producer = SequencedProducer(self.cluster.bootstrap_servers, self.topic, self.config.partitions,
                                          self.config.rate).start()  # fmt: skip
        for n in range(self.config.members):
            self.spawn(f"m{n}")
        if self.recovered(time.monotonic()) is None:
            raise TimeoutError(f"soak: the group did not consume within {self.config.recovery_bound_s:.0f}s")

    def _topic_ready(self, admin: Any) -> bool:
        md = admin.list_topics(topic=self.topic, timeout=5).topics.get(self.topic)
        return bool(md and md.error is None and all(p.leader >= 0 for p in md.partitions.values()))

    def spawn(self, name: str) -> None:
        path = self.workdir / f"{name}.{len(self.logs)}.jsonl"
        self._spawned_ms[name] = int(time.time() * 1000)
        props = bridge_props(self.cluster.bootstrap_servers)
        if name not in self._zk_proxies:
            self._zk_proxies[name] = SilentProxy(self.cluster.port("zookeeper")).start()
        zookeeper = self._zk_proxies[name].address
        self.members[name] = MemberProcess(zookeeper, self.group, self.topic, name, path,
                                           self.config.streams, props, log_level="INFO")  # fmt: skip
        self.logs.append(path)
        self._tails.append(JsonlTail(path))

    # -- watching ----------------------------------------------------------------------------------------
    def check_members(self) -> None:
        """A member that died on its own is a crash: record how, and restart it so the soak goes on."""
        for name, member in list(self.members.items()):
            death = member.death()
            if death:
                self.crashes.append(f"{time.monotonic() - self.began:.1f}s: {death}")
                self.spawn(name)
        if self.zk.state == KazooState.CONNECTED:  # a request made while it reconnects would wait for it
            with contextlib.suppress(KazooException, KazooTimeoutError):  # it went away meanwhile: next time
                self._check_sessions()

    def _check_sessions(self) -> None:
        """A live member whose `ids` node now belongs to another session of the same process had its session
        expire: its duplicates are excused as after a `kill -9`, on what it owned at the previous look (at most
        `HELD_EVERY_S` old, so its offsets are at most that much lower than the commit at the expiry)."""
        now = time.monotonic()
        if now >= self._held_due:
            self._held_due = now + HELD_EVERY_S
            self._held = {name: self._owned_by(name, LOOK_TIMEOUT_S) for name in self.members}
        for name, member in self.members.items():
            stat = self.zk.exists_async(self.paths.member(f"{self.group}_{name}")).get(timeout=LOOK_TIMEOUT_S)
            if stat is None or stat.ctime < self._spawned_ms.get(name, 0):  # none, or a killed predecessor's
                continue
            before = self._sessions.get(name)
            self._sessions[name] = (member.pid, stat.ephemeralOwner)
            if before is not None and before[0] == member.pid and before[1] != stat.ephemeralOwner:
                who = f"{self.group}_{name}@{member.pid}"
                self.session_expiries.append(f"{now - self.began:.1f}s: {who}")
                self.expiry_excuses.append(after_commit(self._held.get(name, {}), who))

    def _wait(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            self.check_members()
            if time.monotonic() > deadline:
                raise TimeoutError(f"soak: timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(0.25)

    def recovered(self, since: float) -> float | None:
        """Seconds from `since` until every partition processed a record produced after now; None past the bound."""
        marks = high_watermarks(self.cluster.bootstrap_servers, self.topic, self.config.partitions)

        def caught_up() -> bool:
            self._read_logs()
            return all(self._newest.get(p, -1) >= mark for p, mark in marks.items())

        try:
            self._wait(caught_up, self.config.recovery_bound_s, "every partition to process new records")
        except TimeoutError:
            return None
        return time.monotonic() - since

    def _read_logs(self) -> None:
        """Take in what the members logged since the last read: newest offset per partition, every key."""
        for tail in self._tails:
            for r in tail.read():
                self._newest[r.partition] = max(self._newest.get(r.partition, -1), r.offset)
                self._processed.add(r.key)

    def owned_by(self, name: str) -> dict[int, int]:
        """Partitions `name` owns now, with their ZooKeeper offset (a lower bound of its last commit). Retried
        while our own client reconnects (after a ZooKeeper fault)."""
        deadline = time.monotonic() + 60
        while True:
            try:
                return self._owned_by(name)
            except KazooException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def _owned_by(self, name: str, timeout_s: float | None = None) -> dict[int, int]:
        prefix = f"{self.group}_{name}-"
        out = {}
        for tp, thread in read_group(self.zk, self.paths.group).owners_of(self.topic).items():
            if thread.startswith(prefix):
                try:
                    path = self.paths.offset(self.topic, tp.partition)
                    out[tp.partition] = int(self.zk.get_async(path).get(timeout=timeout_s)[0])
                except NoNodeError:
                    out[tp.partition] = 0
        return out

    # -- faults ------------------------------------------------------------------------------------------
    def inject(self, fault: Fault) -> FaultRecord:
        record = FaultRecord(round(time.monotonic() - self.began, 1), fault.kind.value, fault.target,
                             round(fault.seconds, 1))  # fmt: skip
        if fault.kind in (FaultKind.BROKER, FaultKind.ZOOKEEPER):
            if not self._stop_and_restart(fault, record):
                return record
        elif fault.kind is FaultKind.MODE_FLIP:
            refusal = self.set_mode(fault.target)
            if refusal:
                record.outcome = f"refused: {refusal}"
            else:
                self.mode = fault.target
        elif fault.kind is FaultKind.BROKER_SILENT:
            self._silence(self.cluster.proxy(fault.target), fault.seconds)
        elif fault.kind is FaultKind.ZOOKEEPER_PARTITION:
            member = self.members[fault.target]
            held = self.owned_by(fault.target)
            self.expiry_excuses.append(after_commit(held, f"{self.group}_{fault.target}@{member.pid}"))
            self._silence(self._zk_proxies[fault.target], fault.seconds)
        else:
            victim = self.members.pop(fault.target)
            held = self.owned_by(fault.target)
            victim.kill()
            self.excuses.append(after_commit(held, f"{self.group}_{fault.target}@{victim.pid}"))
            self._pass(fault.seconds)
            self.spawn(fault.target)
        recovered = self.recovered(time.monotonic())
        record.recovered_s = None if recovered is None else round(recovered, 2)
        self.faults.append(record)
        return record

    def _stop_and_restart(self, fault: Fault, record: FaultRecord) -> bool:
        """Stop a cluster process for the fault's seconds and start it again; False (and the soak aborted, the
        fault recorded) when it would not start again."""
        self.cluster.stop_process(fault.target)
        self._pass(fault.seconds)
        try:
            self.restart_failures += restart_process(self.cluster, fault.target, attempts=5, pause_s=10.0)
        except EnvironmentProblem as exc:  # the soak ends here, and reports what it saw until now
            self.restart_failures.append(str(exc))
            self.aborted = f"{fault.target} could not be started again: {exc}"[:500]
            record.outcome = "injected; the process did not start again"
            self.faults.append(record)
            return False
        return True

    def _silence(self, proxy: SilentProxy, seconds: float) -> None:
        proxy.silence()
        try:
            self._pass(seconds)
        finally:
            proxy.resume()

    def _pass(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            self.check_members()
            time.sleep(min(0.25, max(0.0, until - time.monotonic())))

    def set_mode(self, mode: str) -> str | None:
        """`migrator set-mode` as an operator runs it; None when written, else why the preflight refused."""
        cmd = [sys.executable, "-m", "migrator", "set-mode", mode, "-z", self.cluster.zookeeper, "-g", self.group,
               "-b", self.cluster.bootstrap_servers, "--reason", "soak"]  # fmt: skip
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
        if done.returncode == EXIT_OK:
            return None
        if done.returncode == EXIT_REFUSED:
            return (done.stdout + done.stderr).strip().splitlines()[-1][:200]
        raise RuntimeError(f"set-mode {mode} failed ({done.returncode}): {done.stderr.strip()[-300:]}")

    # -- the end -----------------------------------------------------------------------------------------
    def finish(self) -> dict[str, Any]:
        assert self.producer is not None and self.watcher is not None
        produced = self.producer.stop(flush_timeout_s=120.0)
        self.producer = None

        def all_processed() -> bool:
            self._read_logs()
            return produced <= self._processed

        try:
            self._wait(all_processed, 120, "every produced record to be processed")
            drained = True
        except TimeoutError:  # the verdict below counts what is missing as lost
            drained = False
        for name, member in list(self.members.items()):
            code = member.stop(60)
            if code != 0:
                self.unclean_stops.append(f"{name}: {member.death() or 'did not stop within 60s'}")
            del self.members[name]
        self.watcher.stop()
        self.watcher_intervals = self.watcher.intervals()
        excuses = self.excuses + self.expiry_excuses
        verdict = judge(produced, load_many(self.logs), self.watcher_intervals,
                        allow_duplicate=lambda d: any(excuse(d) for excuse in excuses))  # fmt: skip
        after_kill = sum(1 for d in verdict.duplicates if any(excuse(d) for excuse in self.excuses))
        kinds = Counter(f.kind for f in self.faults if f.outcome == "injected")
        recoveries = [f.recovered_s for f in self.faults if f.recovered_s is not None]
        counts = verdict.counts()
        ok = (verdict.ok and drained and not self.crashes and not self.unclean_stops and not self.aborted
              and len(recoveries) == len(self.faults))  # fmt: skip
        return {
            "ok": ok,
            "config": {**asdict(self.config), "weights": {k.value: w for k, w in self.config.weights}},
            "ran_s": round(time.monotonic() - self.began, 1),
            "faults_injected": sum(kinds.values()),
            "faults_by_kind": dict(kinds),
            "mode_flips_refused": sum(1 for f in self.faults if f.outcome != "injected"),
            "member_crashes": len(self.crashes),
            "crashes": self.crashes,
            "unclean_stops": self.unclean_stops,
            "drained_within_120s": drained,
            "cluster_restart_failures": self.restart_failures,
            "aborted": self.aborted,
            "produced": counts["produced"],
            "lost": counts["lost"],
            "dual_processing": counts["overlaps"] + counts["owner_violations"],
            "zookeeper_session_expiries": self.session_expiries,
            "duplicates": counts["duplicates"],
            "duplicates_after_kill_9": after_kill,
            "duplicates_after_session_expiry": counts["duplicates"] - counts["unexpected_duplicates"] - after_kill,
            "unexpected_duplicates": counts["unexpected_duplicates"],
            "not_recovered_within_bound": len(self.faults) - len(recoveries),
            "recovery_s": {
                "max": max(recoveries, default=None),
                "median": sorted(recoveries)[len(recoveries) // 2] if recoveries else None,
            },
            "verdict": verdict.summary(),
            "faults": [asdict(f) for f in self.faults],
        }

    def close(self) -> None:
        for member in self.members.values():
            if member.alive():
                member.kill()
        if self.producer is not None:
            with contextlib.suppress(Exception):
                self.producer.stop(flush_timeout_s=5.0)
        if self.watcher is not None:
            with contextlib.suppress(Exception):
                self.watcher.stop()
        self.zk.stop()
        self.zk.close()
        for proxy in self._zk_proxies.values():
            proxy.close()


def run(config: SoakConfig, log: Callable[[str], None] = print, keep: Path | None = None) -> dict[str, Any]:
    """The whole soak on a dedicated cluster (always downed); the report as a dict (`ok` says if it passed).
    With `keep`, the members' processing logs and stderr (their INFO log, with times) and the cluster's logs stay in
    that directory for a post-mortem."""
    rng = random.Random(config.seed)
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    with contextlib.nullcontext(str(keep)) if keep else tempfile.TemporaryDirectory(prefix="soak-") as workdir:
        cluster = DevCluster.start(brokers=config.brokers, extra_broker_config=REPLICATED, broker_proxies=True)
        soak: Soak | None = None
        try:
            soak = Soak(config, Path(workdir), cluster)
            soak.start()
            log(f"soak: group {soak.group}, {config.members} bridges x {config.streams} streams, "
                f"{config.partitions} partitions at {config.rate:.0f}/s, seed {config.seed}; brokers "
                f"{cluster.bootstrap_servers}, zookeeper {cluster.zookeeper}, members' logs in {workdir}")  # fmt: skip
            until = time.monotonic() + config.minutes * 60  # faults for that long, however slow the start was
            while time.monotonic() < until and not soak.aborted:
                record = soak.inject(draw_fault(rng, config, soak.mode))
                log(f"  {record.at_s:7.1f}s {record.kind} {record.target} {record.seconds:.1f}s: {record.outcome},"
                    f" recovered {record.recovered_s and round(record.recovered_s, 1)}s")  # fmt: skip
                soak._pass(min(rng.uniform(*config.gap_s), max(0.0, until - time.monotonic())))
            return soak.finish()
        finally:
            if soak is not None:
                soak.close()
            if keep is not None:  # the brokers' and ZooKeeper's own logs, for the same post-mortem
                for log_file in cluster.cluster_dir.glob("*.log"):
                    shutil.copy(log_file, keep / f"cluster-{log_file.name}")
            cluster.down()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--minutes", type=float, default=20.0, help="how long faults are injected (default 20)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the fault sequence (default 1)")
    parser.add_argument("--name", default="soak", help="results file benchmarks/results/NAME.json")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep the members' logs and stderr in DIR")
    args = parser.parse_args(argv)
    if args.minutes <= 0:
        print(f"error: --minutes must be positive, got {args.minutes}", file=sys.stderr)
        return 2
    quiet_libraries()
    doc = run(SoakConfig(minutes=args.minutes, seed=args.seed), keep=args.keep)
    path = save(args.name, doc)
    print({k: v for k, v in doc.items() if k not in ("faults", "config", "crashes")})
    print(f"written to {path}")
    return 0 if doc["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
