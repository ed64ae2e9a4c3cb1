"""How a group's transitions grow with its size: switch pause, rebalance pause and ZooKeeper packets per
switch of a group of bridges, beside a plain group's join, from 2 to 32 members and 16 to 1,024 partitions.

    python -m benchmarks.curves [--quick] [--sizes 2x16,4x64] [--rounds N] [--name NAME] [--member-logs DIR]
                               [-z ZK -b BROKERS]
    python -m benchmarks.curves --replot      # the PNGs and fits again from results/curves.json

Per size (members x partitions, one stream per member, every member in its own process as in
`switch_pause`): a group of bridges is switched between zookeeper and kafka `rounds` times (`set-mode`,
preflight included) and the server's `zk_packets_received` delta is counted over each switch, less the
benchmark's own requests (`OwnRequests`: its convergence polling and the `set-mode` command): the members'
and the brokers' packets in that window, pings included; the server's znode and watch counts are read before the
members start and after the switches (`zk_znode_count`, `zk_watch_count`: the group's own znodes and
watches); then, in mode kafka, one more bridge joins and leaves `rounds` times (the rebalance pause, and
the packets over the join counted the same way); the
baseline is a group of plain confluent-kafka consumers of the same size that one more plain consumer
joins, `rounds` times. Pauses are `migrator.observe.pause`'s, as in `switch_pause`. The producer writes at
most `TOTAL_RATE` records/s in round robin, so at 1,024 partitions a partition gets a record every ~0.3 s:
that is the resolution of the pauses at that size. The 1-minute load average is sampled at each size's
start and end.

Every switch and join (bridges' and the baseline's) is kept as a `Transition`: each partition's resume and
who processed it first after the trigger (`migrator.observe.pause.resumes_after`), the producer's backlog
around it (`migrator.observe.pause.backlog`) and each member process's CPU over the step
(`benchmarks.cost.cpu_seconds`). A backlog of thousands at the trigger says the group was behind the
producer before anything happened: a pause measured then is the machine's as much as the transition's.
Packets per bridge join are set beside the prediction 20·M + 4·P and the older 10 to 16·M² + 4 to 6·P.

The medians and the best of each size's rounds, the least-squares fits (`FITTED`: pauses against members
and against partitions, packets per switch, znodes and watches against both, packets per join against
members² and partitions, and against members and partitions) and their values at 1,000 members and
10,000 partitions go to `results/curves.json`, with four PNGs (`results/curves-switch-pause.png`,
`results/curves-rebalance-pause.png`, `results/curves-zk-packets.png`, `results/curves-resumes.png`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss

from benchmarks.common import (
    RESULTS,
    Cluster,
    Size,
    add_cluster_args,
    close_group,
    cluster,
    group_driver,
    join,
    packets,
    quiet,
    ratio,
    save,
    unique,
)
from benchmarks.cost import cpu_seconds
from benchmarks.member_process import RemoteMember
from migrator.demo.group import wait_for
from migrator.demo.steps import GroupDriver, Step
from migrator.demo.workload import QUIET_LOGGER, SequencedProducer
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.observe.pause import backlog, resumes_after
from migrator.observe.records import Processed
from migrator.protocol.codecs import Mode

TOTAL_RATE = 3200.0  # records/s over the whole topic at most: what 2 cores can produce beside 33 members
SIZES = [(2, 16), (4, 64), (8, 128), (16, 512), (32, 1024)]
QUICK_SIZES = [(2, 16), (4, 32)]
ROUNDS, QUICK_ROUNDS = 2, 2
ADMIN_TIMEOUT_S = 300.0  # creating 1,024 partitions on a fresh broker took over 60 s at a load average of 30-40
PAPER_SIZE = (1000, 10000)  # the size the README extrapolates to
LINEAR = ("1", "members", "partitions")
JOIN = ("1", "members^2", "partitions")  # every bridge re-reads every member's ids node when one joins
BY_MEMBERS, BY_PARTITIONS = ("1", "members"), ("1", "partitions")
PAUSES = ("switch_pause_s", "switch_pause_min_s", "rebalance_pause_s", "rebalance_pause_min_s", "plain_join_s",
          "plain_join_min_s")  # fmt: skip
FITTED = [(f, terms) for f in PAUSES for terms in (BY_MEMBERS, BY_PARTITIONS)] + [
    ("zk_packets_per_switch", LINEAR), ("zk_packets_per_switch_min", LINEAR), ("zk_packets_per_join", JOIN),
    ("zk_packets_per_join_min", JOIN), ("zk_packets_per_join", LINEAR), ("zk_packets_per_join_min", LINEAR),
    ("group_znodes", LINEAR), ("group_watches", LINEAR)]  # fmt: skip
"""What is fitted against what. Members and partitions grow together over the sizes, so a pause (noisy on
a loaded host) is fitted against one of them at a time, and the two extrapolations bracket it."""


SAMPLE_S = 0.02  # how often the producer's sent count is sampled for the backlog
BACKLOG_LEAD_NS = 500_000_000  # the backlog series starts this long before the trigger: its level before


class Kind(StrEnum):
    SWITCH = "switch"
    BRIDGE_JOIN = "bridge join"
    PLAIN_JOIN = "plain join"


@dataclass(frozen=True)
class Transition:
    """One transition as the observer saw it. `resumes`: every partition's (partition, seconds after the
    trigger it resumed, member/thread that processed it first after the trigger, member/thread that resumed
    it); `backlog`: (seconds after the trigger, records produced but not yet taken), from `BACKLOG_LEAD_NS`
    before the trigger to the step's end; `cpu_s`: CPU seconds of each member process (and of the driver,
    which runs the producer and the observer) over the step, a joiner's from its start."""

    kind: Kind
    pause_s: float | None
    zk_packets: int
    resumes: tuple[tuple[int, float, str, str], ...]
    backlog: tuple[tuple[float, int], ...]
    cpu_s: dict[str, float]
    window_s: float

    @classmethod
    def from_json(cls, t: dict[str, Any]) -> Transition:
        return cls(Kind(t["kind"]), t["pause_s"], t["zk_packets"], tuple(tuple(r) for r in t["resumes"]),  # type: ignore[misc]
                   tuple(tuple(b) for b in t["backlog"]), t["cpu_s"], t["window_s"])  # type: ignore[misc]  # fmt: skip


def transition(kind: Kind, trigger_ns: int, end_ns: int, pause_s: float | None, zk_packets: int,
               processed: Sequence[Processed], produced: Sequence[tuple[int, int]], cpu_s: dict[str, float],
               window_s: float) -> Transition:  # fmt: skip
    """The record of one transition from the observer's records and the producer's (time_ns, sent) samples."""
    resumes = tuple((r.partition, round((r.resumed_ns - trigger_ns) / 1e9, 4), r.first_by, r.resumed_by)
                    for r in resumes_after(trigger_ns, processed, end_ns))  # fmt: skip
    window = [(t, n) for t, n in produced if trigger_ns - BACKLOG_LEAD_NS <= t <= end_ns]
    series = tuple((round((t - trigger_ns) / 1e9, 3), n) for t, n in backlog(window, processed))
    return Transition(kind, pause_s, zk_packets, resumes, series, cpu_s, round(window_s, 3))


def predicted_join_packets(members: int, partitions: int) -> int:
    """The prediction for ZooKeeper packets per bridge join into a group of `members` bridges: 20 M + 4 P."""
    return 20 * members + 4 * partitions


def square_join_packets(members: int, partitions: int) -> tuple[int, int]:
    """The older members² extrapolation of packets per join, low and high: 10 to 16 M² + 4 to 6 P."""
    return 10 * members * members + 4 * partitions, 16 * members * members + 6 * partitions


class ProducedSampler:
    """(time_ns, records sent so far) of a producer every `SAMPLE_S`, in a daemon thread: the produced side
    of the backlog."""

    def __init__(self, producer: SequencedProducer) -> None:
        self.samples: list[tuple[int, int]] = []
        self._producer = producer
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="produced-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.samples.append((time.time_ns(), self._producer.sent))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def member_cpu(d: GroupDriver) -> dict[str, float]:
    """CPU seconds so far of each live member's process, and of this (the driver's) process."""
    pids = {name: m.pid for name, m in d.live.items() if isinstance(m, RemoteMember) and m.pid}
    out = {"driver": cpu_seconds(os.getpid())}
    for name, pid in pids.items():
        with contextlib.suppress(OSError):  # a member that exited meanwhile
            out[name] = cpu_seconds(pid)
    return out


def size_of(members: int, partitions: int, total_rate: float = TOTAL_RATE) -> Size:
    return Size(members, 1, partitions, per_partition_rate=min(100.0, total_rate / partitions))


@dataclass(frozen=True)
class Point:
    """One size: medians (seconds; packets per switch), the group's znodes and watches, every measured
    value, and the load average at the size's start and end. None: nothing resolved (see `note`)."""

    members: int
    partitions: int
    switch_pause_s: float | None = None
    switch_pause_max_s: float | None = None
    zk_packets_per_switch: float | None = None
    rebalance_pause_s: float | None = None
    zk_packets_per_join: float | None = None
    plain_join_s: float | None = None
    plain_zk_packets_per_join: float | None = None  # no ZooKeeper client in a plain group: pings and noise
    switch_pause_min_s: float | None = None  # the best of the rounds: what a stall of the machine leaves out
    rebalance_pause_min_s: float | None = None
    plain_join_min_s: float | None = None
    zk_packets_per_switch_min: float | None = None  # the shortest window's: the fewest pings of idle time
    zk_packets_per_join_min: float | None = None
    group_znodes: int | None = None
    group_watches: int | None = None
    switches_s: tuple[float | None, ...] = ()
    packets: tuple[int, ...] = ()
    rebalances_s: tuple[float | None, ...] = ()
    join_packets: tuple[int, ...] = ()
    plain_joins_s: tuple[float | None, ...] = ()
    plain_join_packets: tuple[int, ...] = ()
    zk_packets_join_predicted: int | None = None  # `predicted_join_packets`
    zk_packets_join_vs_predicted: float | None = None  # the median join's packets over it
    zk_packets_join_square: tuple[int, ...] = ()  # `square_join_packets`: low, high
    transitions: tuple[Transition, ...] = ()
    load: tuple[float, ...] = ()
    seconds: float = 0.0
    total_rate: float | None = None  # records/s the producer offered over the topic (None: `TOTAL_RATE`)
    note: str | None = None  # an error that ended the size, or what the producer could not deliver


@dataclass(frozen=True)
class BridgeRun:
    switches_s: tuple[float | None, ...]
    packets: tuple[int, ...]
    rebalances_s: tuple[float | None, ...]
    join_packets: tuple[int, ...]
    transitions: tuple[Transition, ...]
    znodes: int
    watches: int
    note: str | None


def median(values: Sequence[float | int | None]) -> float | None:
    ok = [v for v in values if v is not None]
    return round(statistics.median(ok), 4) if ok else None


def _term(name: str, members: float, partitions: float) -> float:
    return {"1": 1.0, "members": members, "partitions": partitions, "members^2": members * members}[name]


def fit(points: Sequence[Point], field: str, terms: Sequence[str] = LINEAR) -> dict[str, float] | None:
    """Least squares `field = sum(coef * term)` over the points that have it, for terms among "1",
    "members", "partitions", "members^2" (the normal equations, by Gaussian elimination); None when fewer
    points than terms or no unique solution."""
    values = [(p, getattr(p, field)) for p in points]
    rows = [[_term(t, p.members, p.partitions) for t in terms] + [float(v)] for p, v in values if v is not None]
    n = len(terms)
    if len(rows) < n:
        return None
    m = [[sum(r[i] * r[j] for r in rows) for j in range(n + 1)] for i in range(n)]  # [AᵀA | Aᵀy]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-9:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col:
                factor = m[r][col] / m[col][col]
                m[r] = [a - factor * b for a, b in zip(m[r], m[col], strict=True)]
    return {t: float(f"{m[i][n] / m[i][i]:.6g}") for i, t in enumerate(terms)}


def predict(coef: dict[str, float], members: int, partitions: int) -> float:
    return sum(c * _term(t, members, partitions) for t, c in coef.items())


class OwnRequests:
    """Counts the requests the benchmark's own ZooKeeper client sends (kazoo sends every request through
    `KazooClient._call`), so a packets window can leave out the driver's polling for convergence, which
    reads every owner node each 50 ms and would otherwise be most of the packets at 1,024 partitions."""

    def __init__(self, zk: KazooClient) -> None:
        self.sent = 0
        call = zk._call

        def counted(request: Any, async_object: Any) -> Any:
            self.sent += 1
            return call(request, async_object)

        zk._call = counted  # type: ignore[method-assign]


def _window(c: Cluster, own: OwnRequests, d: GroupDriver, sampler: ProducedSampler, kind: Kind,
            step: Callable[[], Step]) -> Transition:  # fmt: skip
    """Run a step: the server's packets over it less the benchmark's own requests, every partition's resume,
    the producer's backlog and the members' CPU."""
    cpu0, began = member_cpu(d), time.monotonic()
    before, own_before = packets(c), own.sent
    done = step()
    sent = packets(c) - before - (own.sent - own_before)
    cpu, window_s, end_ns = member_cpu(d), time.monotonic() - began, time.time_ns()
    used = {name: round(s - cpu0.get(name, 0.0), 4) for name, s in cpu.items()}
    return transition(kind, done.trigger_ns, end_ns, done.pause_s, sent, d.log.records(), list(sampler.samples),
                      used, window_s)  # fmt: skip


def _counts(c: Cluster) -> tuple[int, int]:
    m = c.mntr()
    return int(m["zk_znode_count"]), int(m["zk_watch_count"])


def _stop(producer: SequencedProducer, sampler: ProducedSampler) -> str | None:
    """Stop the producer and its sampler; what it could not deliver is a note on the size, not a lost size
    (these figures judge no delivery: `switch_pause` and the drills do)."""
    sampler.stop()
    try:
        producer.stop()
    except RuntimeError as exc:
        print(f"producer: {exc}", flush=True)
        return str(exc)
    return None


def _started(
    c: Cluster, size: Size, kind: str, log_dir: str | None = None
) -> tuple[GroupDriver, SequencedProducer, ProducedSampler, tuple[int, int]]:
    """A converged group of `kind` under its (sampled) producer, and the server's znode and watch counts
    taken after its topic was created, before its members started."""
    d, producer, _ = group_driver(c, size, f"curve-{kind}", log_dir, ADMIN_TIMEOUT_S)
    tolerate_connection_loss(d)
    counts = _counts(c)
    producer.start()
    sampler = ProducedSampler(producer)
    try:
        start_together(d, kind, [f"m{i}" for i in range(size.members)])
        wait_for(d.converged, start_timeout_s(size.members), "the group to own every partition")
    except BaseException:
        _stop(producer, sampler)
        close_group(d)
        raise
    return d, producer, sampler, counts


def start_timeout_s(members: int) -> float:
    """How long a group's members are given to start and converge: at a load average of 67 on 2 cores, 32
    member processes took over 3 minutes to import and join."""
    return 120.0 + 15.0 * members


def tolerate_connection_loss(d: GroupDriver) -> None:
    """The driver's convergence check, with a lost connection read as "not yet" (kazoo reconnects): on the
    loaded host the benchmark's own ZooKeeper client lost its connection while 32 members joined."""
    check = d.converged

    def converged() -> bool:
        try:
            return check()
        except (ConnectionLoss, KafkaUnavailable):
            return False

    d.converged = converged  # type: ignore[method-assign]


def start_together(d: GroupDriver, kind: str, names: Sequence[str]) -> None:
    """Start the members' processes all at once, then register them with the driver. `GroupDriver.start`
    waits for each member to be up, and a connector is up once its first rebalance is done, so one by one
    every join rebalances every member already there: 32 bridges on 1,024 partitions took ~8 minutes so."""
    assert d.spawn is not None
    members = {name: d.spawn(kind, name) for name in names}
    deadline = time.monotonic() + start_timeout_s(len(names))
    for name, member in members.items():
        assert isinstance(member, RemoteMember)
        d.live[name] = member
        d.known[name] = member.wait_started(max(1.0, deadline - time.monotonic()))


def _joins(c: Cluster, d: GroupDriver, sampler: ProducedSampler, kind: str, rounds: int) -> tuple[Transition, ...]:
    """`rounds` times: one more member of `kind` joins (its transition recorded), then leaves."""
    joins: list[Transition] = []
    own = OwnRequests(d.zk)
    label = Kind.PLAIN_JOIN if kind == "plain" else Kind.BRIDGE_JOIN
    for n in range(rounds):
        name = f"joiner{n}"
        joins.append(_window(c, own, d, sampler, label, lambda name=name: d.step(
            "rebalance", f"{kind} {name} joins", lambda: join(d, kind, name))))  # fmt: skip
        d.step("rebalance", f"{kind} {name} leaves", lambda name=name: d.stop(name))
    return tuple(joins)


def bridge_group(c: Cluster, size: Size, rounds: int, log_dir: str | None = None) -> BridgeRun:
    """Switch pauses with their ZooKeeper packets, the group's znodes and watches, then bridges joining
    the group in mode kafka."""
    d, producer, sampler, (znodes0, watches0) = _started(c, size, "bridge", log_dir)
    try:
        switches: list[Transition] = []
        own = OwnRequests(d.zk)
        for n in range(rounds):
            target = Mode.KAFKA if n % 2 == 0 else Mode.ZOOKEEPER
            switches.append(
                _window(c, own, d, sampler, Kind.SWITCH, lambda target=target: d.set_mode(target, "switch"))
            )
        znodes, watches = _counts(c)
        if rounds % 2 == 0:  # the last switch went back to zookeeper: the rebalances are Kafka's
            d.set_mode(Mode.KAFKA, "switch")
        joins = _joins(c, d, sampler, "bridge", rounds)
    finally:
        note = _stop(producer, sampler)
        close_group(d)
    return BridgeRun(tuple(t.pause_s for t in switches), tuple(t.zk_packets for t in switches),
                     tuple(t.pause_s for t in joins), tuple(t.zk_packets for t in joins), (*switches, *joins),
                     znodes - znodes0, watches - watches0, note)  # fmt: skip


def plain_group(c: Cluster, size: Size, rounds: int) -> tuple[tuple[Transition, ...], str | None]:
    """The baseline: one more plain consumer joins a plain group of the same size, `rounds` times."""
    d, producer, sampler, _ = _started(c, size, "plain")
    try:
        joins = _joins(c, d, sampler, "plain", rounds)
    finally:
        note = _stop(producer, sampler)
        close_group(d)
    return joins, note


def measure(c: Cluster, members: int, partitions: int, rounds: int, log_dir: str | None = None,
            total_rate: float = TOTAL_RATE) -> Point:  # fmt: skip
    """One size, bridges then the plain baseline; a failure is recorded in the point, not raised, so one
    size that the machine could not carry does not lose the others."""
    size = size_of(members, partitions, total_rate)
    print(f"== {members} members on {partitions} partitions", flush=True)
    started, load0 = time.monotonic(), os.getloadavg()[0]
    base = Point(members, partitions, total_rate=total_rate)
    try:
        b = bridge_group(c, size, rounds, log_dir)
        ok = [v for v in b.switches_s if v is not None]
        base = _with(base, switch_pause_s=median(b.switches_s), switch_pause_max_s=round(max(ok), 4) if ok else None,
                     zk_packets_per_switch=median(b.packets), rebalance_pause_s=median(b.rebalances_s),
                     zk_packets_per_join=median(b.join_packets), group_znodes=b.znodes, group_watches=b.watches,
                     switches_s=b.switches_s, packets=b.packets, rebalances_s=b.rebalances_s,
                     join_packets=b.join_packets, transitions=b.transitions)  # fmt: skip
        plain_joins, note = plain_group(c, size, rounds)
        plain = tuple(t.pause_s for t in plain_joins)
        plain_packets = tuple(t.zk_packets for t in plain_joins)
        notes = [n for n in (b.note, note) if n]
        base = _with(base, plain_join_s=median(plain), plain_joins_s=plain, plain_join_packets=plain_packets,
                     plain_zk_packets_per_join=median(plain_packets), transitions=(*b.transitions, *plain_joins),
                     note="; ".join(notes) or None)  # fmt: skip
    except Exception as exc:  # reported in the results: the next size still runs
        traceback.print_exc()
        base = _with(base, note=repr(exc))
    return _with(base, load=(load0, os.getloadavg()[0]), seconds=round(time.monotonic() - started, 1))


def with_minimums(p: Point) -> Point:
    """The point with the best of its rounds and the packets-per-join predictions filled in from its
    measured values."""

    def least(values: tuple[float | int | None, ...]) -> float | None:
        ok = [v for v in values if v is not None]
        return round(min(ok), 4) if ok else None

    predicted = predicted_join_packets(p.members, p.partitions)
    return _with(p, switch_pause_min_s=least(p.switches_s), rebalance_pause_min_s=least(p.rebalances_s),
                 plain_join_min_s=least(p.plain_joins_s), zk_packets_per_switch_min=least(p.packets),
                 zk_packets_per_join_min=least(p.join_packets), zk_packets_join_predicted=predicted,
                 zk_packets_join_vs_predicted=ratio(p.zk_packets_per_join, predicted),
                 zk_packets_join_square=square_join_packets(p.members, p.partitions))  # fmt: skip


def _with(p: Point, **changes: Any) -> Point:
    return Point(**{f.name: getattr(p, f.name) for f in fields(p)} | changes)


def plot(points: Sequence[Point], suffix: str = "") -> list[str]:
    """Three PNGs against group size; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [p.members for p in points]
    labels = [f"{p.members}\n({p.partitions} p)" for p in points]
    charts = (
        ("switch-pause", "pause (s)", [("bridges: switch, median", "switch_pause_s"),
                                       ("bridges: switch, best", "switch_pause_min_s"),
                                       ("plain group: one joins, median", "plain_join_s"),
                                       ("plain group: one joins, best", "plain_join_min_s")]),
        ("rebalance-pause", "pause (s)", [("bridges in mode kafka: one joins, median", "rebalance_pause_s"),
                                          ("bridges in mode kafka: one joins, best", "rebalance_pause_min_s"),
                                          ("plain group: one joins, median", "plain_join_s"),
                                          ("plain group: one joins, best", "plain_join_min_s")]),
        ("zk-packets", "ZooKeeper packets per transition", [("bridges: switch, median", "zk_packets_per_switch"),
                                                ("bridges in mode kafka: one joins, median", "zk_packets_per_join"),
                                                ("plain group: one joins, median", "plain_zk_packets_per_join")]),
    )  # fmt: skip
    load = [v for p in points for v in p.load]
    note = f"1-min load average {min(load):.0f}-{max(load):.0f} on {os.cpu_count()} cores" if load else ""
    paths = []
    for name, ylabel, series in charts:
        fig, ax = plt.subplots(figsize=(7, 4))
        for label, field in series:
            ys = [getattr(p, field) for p in points]
            ax.plot(x, [float("nan") if y is None else y for y in ys], marker="o", label=label)
        ax.set_xscale("log", base=2)
        if ylabel.startswith("pause"):
            ax.set_yscale("log")  # a stall of the loaded machine (tens of seconds) beside sub-second pauses
        ax.set_xticks(x, labels)
        ax.set_xlabel("members (partitions)")
        ax.set_ylabel(ylabel)
        ax.set_title(note, fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = RESULTS / f"curves-{name}{suffix}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(str(path.relative_to(RESULTS.parent.parent)))
    return [*paths, plot_resumes(points, note, suffix)]


def resume_seconds(points: Sequence[Point], kind: Kind) -> list[list[float]]:
    """Per point, every partition's resume (seconds after the trigger) over the rounds of `kind`."""
    return [[r[1] for t in p.transitions if t.kind == kind for r in t.resumes] for p in points]


def plot_resumes(points: Sequence[Point], note: str, suffix: str) -> str:
    """One panel per kind of transition: per size, the distribution of every partition's resume over the
    rounds (a box: quartiles, whiskers to 1.5 IQR, outliers), each round's pause (the latest resume) beside."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(Kind), figsize=(12, 4), sharey=True)
    labels = [f"{p.members}x{p.partitions}" for p in points]
    for ax, kind in zip(axes, Kind, strict=True):
        spread = resume_seconds(points, kind)
        at = [i for i, v in enumerate(spread) if v]
        if at:
            ax.boxplot([spread[i] for i in at], positions=at, widths=0.5)
        for i, p in enumerate(points):
            rounds = [t.pause_s for t in p.transitions if t.kind == kind and t.pause_s is not None]
            ax.plot([i + 0.35] * len(rounds), rounds, "rx", label="pause (each round)" if i == 0 else None)
        ax.set_xticks(range(len(points)), labels)
        ax.set_title(kind.value, fontsize=10)
        ax.set_xlabel("members x partitions")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("partition resumed after the trigger (s)")
    axes[0].legend(fontsize=8)
    fig.suptitle(note, fontsize=9)
    fig.tight_layout()
    path = RESULTS / f"curves-resumes{suffix}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path.relative_to(RESULTS.parent.parent))


def report(points: Sequence[Point], rounds: int, suffix: str) -> dict[str, Any]:
    """Plots, fits and the extrapolation to `PAPER_SIZE`, saved as results/curves<suffix>.json."""
    points = [with_minimums(p) for p in points]
    fits = {f"{f} ~ {' + '.join(terms)}": fit(points, f, terms) for f, terms in FITTED}
    members, partitions = PAPER_SIZE
    at = {f: round(predict(coef, members, partitions), 3) for f, coef in fits.items() if coef is not None}
    pngs = plot(points, suffix)
    joins = [join_packets_line(p) for p in points]
    doc = {"rounds": rounds, "total_rate": TOTAL_RATE, "join_packets": joins, "points": [asdict(p) for p in points],
           "fits": fits, f"at_{members}x{partitions}": at, "plots": pngs}  # fmt: skip
    for line in joins:
        print(line, flush=True)
    print(f"saved {save('curves' + suffix, doc)} and {', '.join(pngs)}", flush=True)
    return doc


def transition_line(t: Transition) -> str:
    """One transition in a line: its pause, the spread of its partitions' resumes, the backlog at the trigger
    and at its peak, the members' CPU and the ZooKeeper packets."""
    resumed = sorted(r[1] for r in t.resumes)
    spread = f"resumes median {statistics.median(resumed):.3f} s, max {resumed[-1]:.3f} s" if resumed else "no resume"
    before = [n for s, n in t.backlog if s <= 0]
    peak = max((n for s, n in t.backlog if s >= 0), default=None)
    members = sum(s for name, s in t.cpu_s.items() if name != "driver")
    return (f"  {t.kind.value}: pause {t.pause_s}; {len(resumed)} partitions, {spread}; backlog at the trigger "
            f"{before[-1] if before else None}, peak {peak}; CPU members {members:.2f} s, driver "
            f"{t.cpu_s.get('driver', 0.0):.2f} s over {t.window_s} s; {t.zk_packets} ZooKeeper packets")  # fmt: skip


def join_packets_line(p: Point) -> str:
    """Packets per bridge join beside the prediction and the older members² extrapolation."""
    low, high = square_join_packets(p.members, p.partitions)
    return (f"{p.members}x{p.partitions}: ZooKeeper packets per bridge join median {p.zk_packets_per_join} (rounds "
            f"{list(p.join_packets)}); 20*M + 4*P = {predicted_join_packets(p.members, p.partitions)} "
            f"(x{p.zk_packets_join_vs_predicted}); 10-16*M^2 + 4-6*P = {low}-{high}")  # fmt: skip


def warm_up(c: Cluster, timeout_s: float = 180.0) -> None:
    """Create a throwaway topic until the broker answers: a dev cluster just started on a loaded machine
    may take longer than the admin client's 10 s to create its first topic, and every size starts so."""
    import logging

    deadline = time.monotonic() + timeout_s
    with KafkaAdmin(c.bootstrap_servers, {"logger": logging.getLogger(QUIET_LOGGER)}) as admin:
        while True:
            try:
                admin.create_topic(unique("curve-warm-up"), 1)
                return
            except KafkaUnavailable:
                if time.monotonic() > deadline:
                    raise


def run(c: Cluster, quick: bool = False, sizes: list[tuple[int, int]] | None = None, rounds: int | None = None,
        log_dir: str | None = None, keep: bool = False, total_rate: float = TOTAL_RATE) -> dict[str, Any]:  # fmt: skip
    """Measure each size and save after each; `keep`: start from the saved points, the sizes measured now
    replacing theirs (to add a size that failed, each with its own baseline)."""
    quiet()
    rounds = rounds or (QUICK_ROUNDS if quick else ROUNDS)
    points = saved_points("-quick" if quick else "") if keep else []
    doc: dict[str, Any] = {}
    warm_up(c)
    for members, partitions in sizes or (QUICK_SIZES if quick else SIZES):
        point = measure(c, members, partitions, rounds, log_dir, total_rate)
        if point.switch_pause_s is None and point.note:  # failed before measuring anything: once more
            point = measure(c, members, partitions, rounds, log_dir, total_rate)
        points = sorted([p for p in points if (p.members, p.partitions) != (members, partitions)] + [point],
                        key=lambda p: (p.members, p.partitions))  # fmt: skip
        for line in map(transition_line, point.transitions):
            print(line, flush=True)
        doc = report(points, rounds, "-quick" if quick else "")  # after each size: a long run keeps what it has
    return doc


def saved_points(suffix: str = "") -> list[Point]:
    doc = json.loads((RESULTS / f"curves{suffix}.json").read_text())
    return [point_from_json(p) for p in doc["points"]]


def point_from_json(p: dict[str, Any]) -> Point:
    tuples = {f.name for f in fields(Point) if f.type.startswith("tuple")}  # type: ignore[union-attr]
    values = {k: tuple(v) if k in tuples else v for k, v in p.items()}
    return Point(**values | {"transitions": tuple(Transition.from_json(t) for t in p.get("transitions", ()))})


def replot(suffix: str = "") -> dict[str, Any]:
    """The PNGs and fits again from the saved points (no cluster)."""
    doc = json.loads((RESULTS / f"curves{suffix}.json").read_text())
    return report(saved_points(suffix), doc["rounds"], suffix)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cluster_args(parser)
    parser.add_argument("--sizes", help="MEMBERSxPARTITIONS,... e.g. 2x16,4x64 (default: 2x16 to 32x1024)")
    parser.add_argument("--rounds", type=int, help=f"switches and joins per size (default {ROUNDS}; quick "
                        f"{QUICK_ROUNDS})")  # fmt: skip
    parser.add_argument("--name", default=f"curves-{os.getpid()}", help="the dev cluster's name (when started)")
    parser.add_argument("--member-logs", metavar="DIR", help="write each bridge's rebalance log here")
    parser.add_argument("--total-rate", type=float, default=TOTAL_RATE,
                        help=f"records/s offered over a topic at most (default {TOTAL_RATE:g})")  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="add the sizes measured now to the saved points")
    parser.add_argument("--replot", action="store_true", help="only redo the PNGs and fits from the saved JSON")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # a SIGTERM stops the members and the cluster like Ctrl-C
    if args.member_logs:
        Path(args.member_logs).mkdir(parents=True, exist_ok=True)
    if args.replot:
        replot("-quick" if args.quick else "")
        return 0
    sizes = None
    if args.sizes:
        sizes = [(int(m), int(p)) for m, p in (item.split("x") for item in args.sizes.split(","))]
    with cluster(args.zookeeper, args.bootstrap_servers, args.name) as c:
        run(c, args.quick, sizes, args.rounds, args.member_logs, args.keep, args.total_rate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
