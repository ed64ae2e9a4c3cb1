"""How a group's transitions grow with its size: switch pause, join and leave pauses and ZooKeeper packets
of a group of bridges, beside a plain group's join and leave, from 2 to 32 members and 16 to 1,024 partitions,
with eager and cooperative rebalancing, each figure set beside its baseline from the same run and its goal.

    python -m benchmarks.curves [--quick] [--sizes 2x16,4x64] [--protocols eager,cooperative] [--rounds N]
                               [--name NAME] [--member-logs DIR] [-z ZK -b BROKERS]
    python -m benchmarks.curves --replot      # the PNGs, fits and verdicts again from the saved JSON

A quiet run of the three sizes that judge the bridge, both protocols:

    python -m benchmarks.curves --sizes 8x128,16x512,32x1024 --protocols eager,cooperative --name curves-quiet

Per size and protocol (members x partitions, one stream per member, every member in its own process as in
`switch_pause`, the members of a group started together): a group of bridges is switched between
zookeeper and kafka `rounds` times (`set-mode`, preflight included) and the server's `zk_packets_received`
delta is counted over each switch, less the benchmark's own requests (`OwnRequests`: its convergence
polling and the `set-mode` command): the members' and the brokers' packets in that window, pings included;
the server's znode and watch counts are read before the members start and after the switches
(`zk_znode_count`, `zk_watch_count`: the group's own znodes and watches); then, in mode kafka, one more
bridge joins and then leaves as an application is stopped (SIGTERM: its stream loop ends, it commits and
shuts down), `rounds` times (the join's and the leave's pauses, and the packets over each); the baseline is
a group of plain confluent-kafka consumers of the same size that one more plain consumer joins and leaves
(SIGTERM too), `rounds` times; each join and leave comes a random part of a heartbeat interval after the
previous step (`at_random_heartbeat_phase`). `--protocols cooperative` gives the bridges' embedded members and the plain
consumers `partition.assignment.strategy=cooperative-sticky` (`curves_model.ASSIGNOR`); eager is `range`.
Pauses are `migrator.observe.pause`'s, as in `switch_pause`. The producer writes at most `TOTAL_RATE`
records/s in round robin, so at 1,024 partitions a partition gets a record every ~0.3 s: that per-partition
record interval is the resolution of the pauses at that size, printed with each verdict beside the rate
the producer achieved. Before its first step each group runs `STEADY_S` with nothing happening: the longest
any partition then went unprocessed (its steady gap) is the floor of this machine's gaps, printed beside
the staying partitions' gaps. The 1-minute load average is sampled at the start and end of each size and
protocol.

Sizes run one after the other, eager then cooperative within a size, so each baseline is measured minutes
from its figure. A quiet run of the three judged sizes takes about half an hour on 2 cores (32 x 1,024 is
most of it: its 32 members start together, its topic of 1,024 partitions is created once per group).

Every transition (bridges' and the baseline's) is kept as a `Transition`: each partition's resume and who
processed it first after the trigger (`migrator.observe.pause.resumes_after`), the producer's backlog
around it (`migrator.observe.pause.backlog`), each member process's CPU over the step
(`benchmarks.cost.cpu_seconds`), and its partitions split into staying (the same member/thread processed
them last before the trigger and resumed them) and moved ones: the longest gap of a staying partition and
the pause of the moved ones (`migrator.observe.pause.split`), the figures a cooperative rebalance is judged
by. They are computed once the group has stopped, so the driver's CPU does not weigh on the next step. A
backlog of thousands at the trigger says the group was behind the producer before anything happened: a
pause measured then is the machine's as much as the transition's.

The verdict (`curves_model.checks`), printed at the end and saved in the JSON per size and protocol:
eager, a bridge join and a bridge leave at most 1.0x a plain join and leave, a switch at most 0.5x a plain
join; cooperative, staying partitions never paused (longest gap at most twice the record interval, or the
group's steady gap when longer) and moved ones at most 1.0x a plain cooperative group's; ZooKeeper packets
per bridge join at most 20·M + 4·P, counted less what the bridges send anyway over as long a window (their
packets/s over `STEADY_S` in mode kafka with nothing happening: offset commits and pings), the whole
window's count beside. Each with its median and best round on both sides.

The medians and the best of each size's rounds, the least-squares fits (`FITTED`: pauses against members
and against partitions, packets per switch, znodes and watches against both, packets per join against
members² and partitions, and against members and partitions) and their values at 1,000 members and
10,000 partitions go to `results/curves.json` (cooperative: `results/curves-cooperative.json`; `--quick`
adds `-quick`), with four PNGs (`results/curves-switch-pause.png`, `results/curves-rebalance-pause.png`,
`results/curves-zk-packets.png`, `results/curves-resumes.png`; cooperative ones carry `-cooperative`).
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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss

from benchmarks.common import (
    RESULTS,
    Cluster,
    Size,
    add_cluster_args,
    at_random_heartbeat_phase,
    close_group,
    cluster,
    group_driver,
    join,
    packets,
    save,
    unique,
)
from benchmarks.cost import cpu_seconds
from benchmarks.curves_model import (
    ASSIGNOR,
    LINEAR,
    TOTAL_RATE,
    Kind,
    Point,
    Protocol,
    Transition,
    achieved_rate,
    fit,
    median,
    net_join_packets,
    partition_rate,
    point_from_json,
    predict,
    predicted_join_packets,
    replace,
    resolution_s,
    resume_seconds,
    square_join_packets,
    steady_gap,
    transition,
    verdict,
    verdict_lines,
    with_minimums,
)
from benchmarks.member_process import RemoteMember
from benchmarks.rolling_restart import leave
from migrator.demo.group import wait_for
from migrator.demo.steps import GroupDriver, Step
from migrator.demo.workload import QUIET_LOGGER, SequencedProducer, quiet_libraries
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.observe.pause import first_starts
from migrator.observe.records import Processed
from migrator.protocol.codecs import Mode

SIZES = [(2, 16), (4, 64), (8, 128), (16, 512), (32, 1024)]
QUICK_SIZES = [(2, 16), (4, 32)]
ROUNDS, QUICK_ROUNDS = 3, 2  # three: a median that one stall of the machine does not decide
ADMIN_TIMEOUT_S = 300.0  # creating 1,024 partitions on a fresh broker took over 60 s at a load average of 30-40
PAPER_SIZE = (1000, 10000)  # the size the README extrapolates to
JOIN = ("1", "members^2", "partitions")  # every bridge re-reads every member's ids node when one joins
BY_MEMBERS, BY_PARTITIONS = ("1", "members"), ("1", "partitions")
PAUSES = ("switch_pause_s", "switch_pause_min_s", "rebalance_pause_s", "rebalance_pause_min_s", "plain_join_s",
          "plain_join_min_s", "bridge_leave_s", "plain_leave_s")  # fmt: skip
FITTED = [(f, terms) for f in PAUSES for terms in (BY_MEMBERS, BY_PARTITIONS)] + [
    ("zk_packets_per_switch", LINEAR), ("zk_packets_per_switch_min", LINEAR), ("zk_packets_per_join", JOIN),
    ("zk_packets_per_join_min", JOIN), ("zk_packets_per_join", LINEAR), ("zk_packets_per_join_min", LINEAR),
    ("group_znodes", LINEAR), ("group_watches", LINEAR)]  # fmt: skip
"""What is fitted against what. Members and partitions grow together over the sizes, so a pause (noisy on
a loaded host) is fitted against one of them at a time, and the two extrapolations bracket it."""


SAMPLE_S = 0.02  # how often the producer's sent count is sampled for the backlog
STEADY_S = 2.0  # a window with nothing happening before the first step: the group's steady gaps


@dataclass(frozen=True)
class Pending:
    """A measured step whose `Transition` is computed once the group has stopped (`finish`): scanning a
    million records between steps would load the machine the next step is measured on."""

    kind: Kind
    trigger_ns: int
    end_ns: int
    pause_s: float | None
    zk_packets: int
    cpu_s: dict[str, float]
    window_s: float

    def finish(self, records: Sequence[Processed], starts: Sequence[int], produced: Sequence[tuple[int, int]]
               ) -> Transition:  # fmt: skip
        return transition(self.kind, self.trigger_ns, self.end_ns, self.pause_s, self.zk_packets, records,
                          produced, self.cpu_s, self.window_s, starts)  # fmt: skip


def finished(steps: Sequence[Pending], d: GroupDriver, sampler: ProducedSampler) -> tuple[Transition, ...]:
    """Every step's `Transition`, from the stopped group's observation."""
    records = d.log.records()
    starts = first_starts(records)
    return tuple(s.finish(records, starts, sampler.samples) for s in steps)


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
    return Size(members, 1, partitions, per_partition_rate=partition_rate(partitions, total_rate))


@dataclass(frozen=True)
class GroupRun:
    """What one group measured: its transitions in order, the group's znodes and watches after the switches
    (a bridge group's), and what its producer could not deliver."""

    transitions: tuple[Transition, ...]
    znodes: int | None
    watches: int | None
    note: str | None
    steady_gap_s: float | None
    produced_rate: float | None  # records/s the producer achieved while the group ran (`achieved_rate`)
    steady_packets_per_s: float | None = None  # ZooKeeper packets/s in mode kafka with nothing happening


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


def _window(c: Cluster, own: OwnRequests, d: GroupDriver, kind: Kind, step: Callable[[], Step]) -> Pending:
    """Run a step: the server's packets over it less the benchmark's own requests and the members' CPU."""
    cpu0, began = member_cpu(d), time.monotonic()
    before, own_before = packets(c), own.sent
    done = step()
    sent = packets(c) - before - (own.sent - own_before)
    cpu, window_s, end_ns = member_cpu(d), time.monotonic() - began, time.time_ns()
    used = {name: round(s - cpu0.get(name, 0.0), 4) for name, s in cpu.items()}
    return Pending(kind, done.trigger_ns, end_ns, done.pause_s, sent, used, window_s)


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
    c: Cluster, size: Size, kind: str, protocol: Protocol, log_dir: str | None = None
) -> tuple[GroupDriver, SequencedProducer, ProducedSampler, tuple[int, int]]:
    """A converged group of `kind` under its (sampled) producer, and the server's znode and watch counts
    taken after its topic was created, before its members started."""
    d, producer, _ = group_driver(c, size, f"curve-{kind}", log_dir, ADMIN_TIMEOUT_S, ASSIGNOR[protocol])
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


def _rounds(c: Cluster, d: GroupDriver, kind: str, rounds: int) -> list[Pending]:
    """`rounds` times: one more member of `kind` joins, then leaves on SIGTERM, each transition measured."""
    steps: list[Pending] = []
    own = OwnRequests(d.zk)
    joined, left = (Kind.PLAIN_JOIN, Kind.PLAIN_LEAVE) if kind == "plain" else (Kind.BRIDGE_JOIN, Kind.BRIDGE_LEAVE)
    for n in range(rounds):
        name = f"joiner{n}"
        at_random_heartbeat_phase()
        steps.append(_window(c, own, d, joined, lambda name=name: d.step(
            "rebalance", f"{kind} {name} joins", lambda: join(d, kind, name))))  # fmt: skip
        at_random_heartbeat_phase()
        steps.append(_window(c, own, d, left, lambda name=name: d.step(
            "rebalance", f"{kind} {name} leaves", lambda: leave(d, name))))  # fmt: skip
    return steps


def _converged(d: GroupDriver) -> None:
    """Wait until every partition was processed since now: the group has converged."""
    since = time.time_ns()
    wait_for(lambda: len(d.log.resumed_since(since)) >= d.sizing.partitions, d.sizing.step_timeout_s,
             "every partition processed once the group converged", interval_s=0.05)  # fmt: skip


def _steady(d: GroupDriver) -> tuple[int, int]:
    """`STEADY_S` with nothing happening, once the group converged: the window whose longest gap is the
    group's floor."""
    _converged(d)
    began = time.time_ns()
    time.sleep(STEADY_S)
    return began, time.time_ns()


def _steady_packets(c: Cluster, d: GroupDriver) -> float:
    """The group's ZooKeeper packets per second over `STEADY_S` with nothing happening (offset commits and
    session pings), once it converged: what any window holds besides its step."""
    _converged(d)
    own = OwnRequests(d.zk)
    before, began = packets(c), time.monotonic()
    time.sleep(STEADY_S)
    return round((packets(c) - before - own.sent) / (time.monotonic() - began), 2)


def _switches(c: Cluster, d: GroupDriver, rounds: int) -> list[Pending]:
    """`rounds` switches, to kafka first, then back and forth."""
    own = OwnRequests(d.zk)
    switches = []
    for n in range(rounds):
        target = Mode.KAFKA if n % 2 == 0 else Mode.ZOOKEEPER
        switches.append(_window(c, own, d, Kind.SWITCH, lambda target=target: d.set_mode(target, "switch")))
    return switches


def bridge_group(c: Cluster, size: Size, rounds: int, protocol: Protocol, log_dir: str | None = None) -> GroupRun:
    """Switch pauses with their ZooKeeper packets, the group's znodes and watches, then bridges joining
    and leaving the group in mode kafka."""
    d, producer, sampler, (znodes0, watches0) = _started(c, size, "bridge", protocol, log_dir)
    steps: list[Pending] = []
    try:
        steady = _steady(d)
        steps += _switches(c, d, rounds)
        znodes, watches = _counts(c)
        if rounds % 2 == 0:  # the last switch went back to zookeeper: the rebalances are Kafka's
            d.set_mode(Mode.KAFKA, "switch")
        steady_rate = _steady_packets(c, d)
        steps += _rounds(c, d, "bridge", rounds)
    finally:
        note = _stop(producer, sampler)
        close_group(d)
    gap = steady_gap(d.log.records(), *steady)
    return GroupRun(finished(steps, d, sampler), znodes - znodes0, watches - watches0, note, gap,
                    achieved_rate(sampler.samples), steady_rate)  # fmt: skip


def plain_group(c: Cluster, size: Size, rounds: int, protocol: Protocol, log_dir: str | None = None) -> GroupRun:
    """The baseline: one more plain consumer joins a plain group of the same size and leaves, `rounds`
    times."""
    d, producer, sampler, _ = _started(c, size, "plain", protocol, log_dir)
    try:
        steady = _steady(d)
        steps = _rounds(c, d, "plain", rounds)
    finally:
        note = _stop(producer, sampler)
        close_group(d)
    return GroupRun(finished(steps, d, sampler), None, None, note, steady_gap(d.log.records(), *steady),
                    achieved_rate(sampler.samples))  # fmt: skip


def plain_log_dir(log_dir: str | None) -> str | None:
    """Where the plain group's members log (their librdkafka debug only, with `member_process.CGRP_DEBUG_ENV`
    set): a folder of its own, since plain members take the bridges' names."""
    if log_dir is None:
        return None
    path = Path(log_dir) / "plain"
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def point_of(base: Point, bridges: GroupRun, plain: GroupRun) -> Point:
    """The size's point from its two groups' transitions."""

    def of(kind: Kind, field: str = "pause_s") -> tuple[Any, ...]:
        return tuple(getattr(t, field) for t in (*bridges.transitions, *plain.transitions) if t.kind == kind)

    switches = of(Kind.SWITCH)
    ok = [v for v in switches if v is not None]
    notes = [n for n in (bridges.note, plain.note) if n]
    return replace(base, switch_pause_s=median(switches), switch_pause_max_s=round(max(ok), 4) if ok else None,
                   zk_packets_per_switch=median(of(Kind.SWITCH, "zk_packets")),
                   rebalance_pause_s=median(of(Kind.BRIDGE_JOIN)),
                   zk_packets_per_join=median(of(Kind.BRIDGE_JOIN, "zk_packets")), group_znodes=bridges.znodes,
                   group_watches=bridges.watches, switches_s=switches, packets=of(Kind.SWITCH, "zk_packets"),
                   rebalances_s=of(Kind.BRIDGE_JOIN), join_packets=of(Kind.BRIDGE_JOIN, "zk_packets"),
                   plain_join_s=median(of(Kind.PLAIN_JOIN)), plain_joins_s=of(Kind.PLAIN_JOIN),
                   plain_join_packets=of(Kind.PLAIN_JOIN, "zk_packets"),
                   plain_zk_packets_per_join=median(of(Kind.PLAIN_JOIN, "zk_packets")),
                   transitions=(*bridges.transitions, *plain.transitions), note="; ".join(notes) or None,
                   steady_gap_s=bridges.steady_gap_s, plain_steady_gap_s=plain.steady_gap_s,
                   produced_rate=(bridges.produced_rate, plain.produced_rate),
                   zk_steady_packets_per_s=bridges.steady_packets_per_s,
                   join_packets_net=net_join_packets(bridges.transitions, bridges.steady_packets_per_s))  # fmt: skip


def measure(c: Cluster, members: int, partitions: int, rounds: int, protocol: Protocol = Protocol.EAGER,
            log_dir: str | None = None, total_rate: float = TOTAL_RATE) -> Point:  # fmt: skip
    """One size and protocol, bridges then the plain baseline; a failure is recorded in the point, not
    raised, so one size that the machine could not carry does not lose the others."""
    size = size_of(members, partitions, total_rate)
    print(f"== {members} members on {partitions} partitions, {protocol.value}: a record every "
          f"{resolution_s(partitions, total_rate)} s per partition, {size.per_partition_rate * partitions:g} "
          f"records/s over the topic", flush=True)  # fmt: skip
    started, load0 = time.monotonic(), os.getloadavg()[0]
    base = Point(members, partitions, total_rate=total_rate, protocol=protocol)
    try:
        bridges = bridge_group(c, size, rounds, protocol, log_dir)
        base = point_of(base, bridges, plain_group(c, size, rounds, protocol, plain_log_dir(log_dir)))
    except Exception as exc:  # reported in the results: the next size still runs
        traceback.print_exc()
        base = replace(base, note=repr(exc))
    return replace(base, load=(load0, os.getloadavg()[0]), seconds=round(time.monotonic() - started, 1))


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
                                          ("plain group: one joins, best", "plain_join_min_s"),
                                          ("bridges in mode kafka: one leaves, median", "bridge_leave_s"),
                                          ("plain group: one leaves, median", "plain_leave_s")]),
        ("zk-packets", "ZooKeeper packets per transition", [("bridges: switch, median", "zk_packets_per_switch"),
                                                ("bridges in mode kafka: one joins, median", "zk_packets_per_join"),
                                                ("plain group: one joins, median", "plain_zk_packets_per_join")]),
    )  # fmt: skip
    load = [v for p in points for v in p.load]
    protocols = "/".join(sorted({p.protocol.value for p in points}))
    note = f"{protocols}; 1-min load average {min(load):.0f}-{max(load):.0f} on {os.cpu_count()} cores" if load else ""
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


def plot_resumes(points: Sequence[Point], note: str, suffix: str) -> str:
    """One panel per kind of transition: per size, the distribution of every partition's resume over the
    rounds (a box: quartiles, whiskers to 1.5 IQR, outliers), each round's pause (the latest resume) beside."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(Kind), figsize=(16, 4), sharey=True)
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


def report(points: Sequence[Point], rounds: int, suffix: str, measured_at: str | None = None) -> dict[str, Any]:
    """Plots, fits, verdicts and the extrapolation to `PAPER_SIZE`, saved as results/curves<suffix>.json;
    `measured_at`: when the points were measured, if not now (a replot)."""
    points = [with_minimums(p) for p in points]
    fits = {f"{f} ~ {' + '.join(terms)}": fit(points, f, terms) for f, terms in FITTED}
    members, partitions = PAPER_SIZE
    at = {f: round(predict(coef, members, partitions), 3) for f, coef in fits.items() if coef is not None}
    pngs = plot(points, suffix)
    joins = [join_packets_line(p) for p in points]
    doc = {"rounds": rounds, "total_rate": TOTAL_RATE, "join_packets": joins,
           "verdicts": [verdict(p) for p in points], "points": [asdict(p) for p in points], "fits": fits,
           f"at_{members}x{partitions}": at, "plots": pngs}  # fmt: skip
    if measured_at is not None:
        doc["measured_at"] = measured_at
    for line in joins:
        print(line, flush=True)
    print(f"saved {save('curves' + suffix, doc)} and {', '.join(pngs)}", flush=True)
    return doc


def transition_line(t: Transition) -> str:
    """One transition in a line: its pause, the spread of its partitions' resumes, staying and moved
    partitions, the backlog at the trigger and at its peak, the members' CPU and the ZooKeeper packets."""
    resumed = sorted(r[1] for r in t.resumes)
    spread = f"resumes median {statistics.median(resumed):.3f} s, max {resumed[-1]:.3f} s" if resumed else "no resume"
    before = [n for s, n in t.backlog if s <= 0]
    peak = max((n for s, n in t.backlog if s >= 0), default=None)
    members = sum(s for name, s in t.cpu_s.items() if name != "driver")
    return (f"  {t.kind.value}: pause {t.pause_s}; {len(resumed)} partitions, {spread}; {t.staying} staying "
            f"(longest gap {t.staying_gap_s}), {t.moved} moved (pause {t.moved_pause_s}); backlog at the trigger "
            f"{before[-1] if before else None}, peak {peak}; CPU members {members:.2f} s, driver "
            f"{t.cpu_s.get('driver', 0.0):.2f} s over {t.window_s} s; {t.zk_packets} ZooKeeper packets")  # fmt: skip


def join_packets_line(p: Point) -> str:
    """Packets per bridge join beside the prediction and the older members² extrapolation."""
    low, high = square_join_packets(p.members, p.partitions)
    return (f"{p.members}x{p.partitions}: ZooKeeper packets per bridge join median {p.zk_packets_per_join} (rounds "
            f"{list(p.join_packets)}); 20*M + 4*P = {predicted_join_packets(p.members, p.partitions)} "
            f"(x{p.zk_packets_join_vs_predicted}); less the steady {p.zk_steady_packets_per_s}/s over each "
            f"window {list(p.join_packets_net)}; 10-16*M^2 + 4-6*P = {low}-{high}")  # fmt: skip


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


def suffix_of(protocol: Protocol, quick: bool) -> str:
    """The results' name suffix: eager keeps the names it always had, cooperative adds its own."""
    return ("" if protocol is Protocol.EAGER else f"-{protocol.value}") + ("-quick" if quick else "")


def run(c: Cluster, quick: bool = False, sizes: list[tuple[int, int]] | None = None, rounds: int | None = None,
        log_dir: str | None = None, keep: bool = False, total_rate: float = TOTAL_RATE,
        protocols: Sequence[Protocol] = (Protocol.EAGER,)) -> dict[Protocol, dict[str, Any]]:  # fmt: skip
    """Measure each size under each protocol and save after each; `keep`: start from the saved points, the
    sizes measured now replacing theirs (to add a size that failed, each with its own baseline). The verdicts
    of every protocol are printed at the end."""
    quiet_libraries()
    rounds = rounds or (QUICK_ROUNDS if quick else ROUNDS)
    points = {p: saved_points(suffix_of(p, quick)) if keep else [] for p in protocols}
    docs: dict[Protocol, dict[str, Any]] = {}
    warm_up(c)
    for members, partitions in sizes or (QUICK_SIZES if quick else SIZES):
        for protocol in protocols:
            point = measure(c, members, partitions, rounds, protocol, log_dir, total_rate)
            if point.switch_pause_s is None and point.note:  # failed before measuring anything: once more
                point = measure(c, members, partitions, rounds, protocol, log_dir, total_rate)
            others = [p for p in points[protocol] if (p.members, p.partitions) != (members, partitions)]
            points[protocol] = sorted([*others, point], key=lambda p: (p.members, p.partitions))
            for line in map(transition_line, point.transitions):
                print(line, flush=True)
            docs[protocol] = report(points[protocol], rounds, suffix_of(protocol, quick))  # after each: kept
    print_verdicts(docs.values())
    return docs


def print_verdicts(docs: Sequence[dict[str, Any]] | Any) -> None:
    print("== verdict: each figure beside its baseline from the same run, and its goal", flush=True)
    for doc in docs:
        for v in doc["verdicts"]:
            print("\n".join(verdict_lines(v)), flush=True)


def saved_points(suffix: str = "") -> list[Point]:
    doc = json.loads((RESULTS / f"curves{suffix}.json").read_text())
    return [point_from_json(p) for p in doc["points"]]


def replot(quick: bool = False) -> list[dict[str, Any]]:
    """The PNGs, fits and verdicts again from each protocol's saved points (no cluster)."""
    docs = []
    for protocol in Protocol:
        path = RESULTS / f"curves{suffix_of(protocol, quick)}.json"
        if path.exists():
            saved = json.loads(path.read_text())
            suffix = suffix_of(protocol, quick)
            docs.append(report(saved_points(suffix), saved["rounds"], suffix, saved.get("measured_at")))
    print_verdicts(docs)
    return docs


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cluster_args(parser)
    parser.add_argument("--sizes", help="MEMBERSxPARTITIONS,... e.g. 2x16,4x64 (default: 2x16 to 32x1024)")
    parser.add_argument("--rounds", type=int, help=f"switches, and joins each followed by a leave, per size "
                        f"(default {ROUNDS}; quick {QUICK_ROUNDS})")  # fmt: skip
    parser.add_argument("--protocols", "--protocol", default="eager",
                        help="eager, cooperative or both: eager,cooperative (default eager)")  # fmt: skip
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
        replot(args.quick)
        return 0
    sizes = None
    if args.sizes:
        sizes = [(int(m), int(p)) for m, p in (item.split("x") for item in args.sizes.split(","))]
    protocols = [Protocol(p.strip()) for p in args.protocols.split(",")]
    with cluster(args.zookeeper, args.bootstrap_servers, args.name) as c:
        run(c, args.quick, sizes, args.rounds, args.member_logs, args.keep, args.total_rate, protocols)
    return 0


if __name__ == "__main__":
    sys.exit(main())
