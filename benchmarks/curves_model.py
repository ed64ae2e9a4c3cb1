"""The size curves' figures, pure: what one transition was (`Transition`), what one size and protocol measured
(`Point`), the least-squares fits and the verdict that sets every figure beside its same-run baseline and its
goal (`verdict`). `benchmarks.curves` measures; this module only computes."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

from benchmarks.common import ratio
from migrator.observe.pause import backlog_from, first_starts, longest_gap, resumes_after, split
from migrator.observe.records import Processed

TOTAL_RATE = 3200.0  # records/s over the whole topic at most: what 2 cores can produce beside 33 members
MAX_PARTITION_RATE = 100.0  # records/s per partition at most: a record every 10 ms on small topics
BACKLOG_LEAD_NS = 500_000_000  # the backlog series starts this long before the trigger: its level before
LOOKBACK_NS = 2_000_000_000  # who processed a partition last before the trigger is looked for this far back
LINEAR = ("1", "members", "partitions")


class Kind(StrEnum):
    SWITCH = "switch"
    BRIDGE_JOIN = "bridge join"
    PLAIN_JOIN = "plain join"
    BRIDGE_LEAVE = "bridge leave"
    PLAIN_LEAVE = "plain leave"


class Protocol(StrEnum):
    """The rebalance protocol of a group's Kafka members: the assignor the bridges' embedded members and the
    plain consumers offer (`ASSIGNOR`)."""

    EAGER = "eager"
    COOPERATIVE = "cooperative"


ASSIGNOR = {Protocol.EAGER: "range", Protocol.COOPERATIVE: "cooperative-sticky"}


@dataclass(frozen=True)
class Transition:
    """One transition as the observer saw it. `resumes`: every partition's (partition, seconds after the
    trigger it resumed, member/thread that processed it first after the trigger, member/thread that resumed
    it); `backlog`: (seconds after the trigger, records produced but not yet taken), from `BACKLOG_LEAD_NS`
    before the trigger to the step's end; `cpu_s`: CPU seconds of each member process (and of the driver,
    which runs the producer and the observer) over the step, a joiner's from its start. `staying`/`moved`:
    partitions whose worker after the trigger is / is not the one that processed them last before it, the
    longest gap of a staying one and the pause of the moved ones (`migrator.observe.pause.split`)."""

    kind: Kind
    pause_s: float | None
    zk_packets: int
    resumes: tuple[tuple[int, float, str, str], ...]
    backlog: tuple[tuple[float, int], ...]
    cpu_s: dict[str, float]
    window_s: float
    staying: int | None = None
    moved: int | None = None
    staying_gap_s: float | None = None
    moved_pause_s: float | None = None

    @classmethod
    def from_json(cls, t: dict[str, Any]) -> Transition:
        extra = {k: t[k] for k in ("staying", "moved", "staying_gap_s", "moved_pause_s") if k in t}
        return cls(Kind(t["kind"]), t["pause_s"], t["zk_packets"], tuple(tuple(r) for r in t["resumes"]),  # type: ignore[misc]
                   tuple(tuple(b) for b in t["backlog"]), t["cpu_s"], t["window_s"], **extra)  # type: ignore[misc]  # fmt: skip


def transition(kind: Kind, trigger_ns: int, end_ns: int, pause_s: float | None, zk_packets: int,
               processed: Sequence[Processed], produced: Sequence[tuple[int, int]], cpu_s: dict[str, float],
               window_s: float, starts: Sequence[int] | None = None) -> Transition:  # fmt: skip
    """The record of one transition from the observer's records and the producer's (time_ns, sent) samples;
    `starts`: the observation's `first_starts`, when already computed."""
    near = [r for r in processed if trigger_ns - LOOKBACK_NS <= r.start_ns < end_ns]
    resumes = tuple((r.partition, round((r.resumed_ns - trigger_ns) / 1e9, 4), r.first_by, r.resumed_by)
                    for r in resumes_after(trigger_ns, near, end_ns))  # fmt: skip
    window = [(t, n) for t, n in produced if trigger_ns - BACKLOG_LEAD_NS <= t <= end_ns]
    starts = first_starts(processed) if starts is None else starts
    series = tuple((round((t - trigger_ns) / 1e9, 3), n) for t, n in backlog_from(window, starts))
    moved = split(trigger_ns, near, trigger_ns - LOOKBACK_NS, end_ns)
    return Transition(kind, pause_s, zk_packets, resumes, series, cpu_s, round(window_s, 3), moved.staying,
                      moved.moved, moved.staying_gap_s, moved.moved_pause_s)  # fmt: skip


def steady_gap(processed: Sequence[Processed], since_ns: int, until_ns: int) -> float | None:
    """The longest any partition went unprocessed in [since_ns, until_ns), a window where nothing happened:
    the floor under which no gap of a transition means anything on this machine, now. A gap is measured
    from a record at most `LOOKBACK_NS` before the window."""
    near = [r for r in processed if since_ns - LOOKBACK_NS <= r.start_ns < until_ns]
    gap = longest_gap(near, since_ns, until_ns)
    return round(gap.seconds, 4) if gap is not None else None


def achieved_rate(samples: Sequence[tuple[int, int]]) -> float | None:
    """Records/s a producer sent between its first and last (time_ns, sent so far) samples: whether the
    pauses' resolution is the one asked for."""
    if len(samples) < 2 or samples[-1][0] <= samples[0][0]:
        return None
    return round((samples[-1][1] - samples[0][1]) / ((samples[-1][0] - samples[0][0]) / 1e9), 1)


def predicted_join_packets(members: int, partitions: int) -> int:
    """The prediction for ZooKeeper packets per bridge join into a group of `members` bridges: 20 M + 4 P."""
    return 20 * members + 4 * partitions


def square_join_packets(members: int, partitions: int) -> tuple[int, int]:
    """The older members² extrapolation of packets per join, low and high: 10 to 16 M² + 4 to 6 P."""
    return 10 * members * members + 4 * partitions, 16 * members * members + 6 * partitions


def partition_rate(partitions: int, total_rate: float = TOTAL_RATE) -> float:
    """Records/s each partition gets from the producer."""
    return min(MAX_PARTITION_RATE, total_rate / partitions)


def resolution_s(partitions: int, total_rate: float | None = None) -> float:
    """The per-partition record interval: no pause shorter than it can be seen."""
    return round(1.0 / partition_rate(partitions, total_rate or TOTAL_RATE), 4)


@dataclass(frozen=True)
class Point:
    """One size and protocol: medians (seconds; packets per switch), the group's znodes and watches, every
    measured value, and the load average at the size's start and end. None: nothing resolved (see `note`)."""

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
    protocol: Protocol = Protocol.EAGER
    resolution_s: float | None = None  # `resolution_s`
    bridge_leave_s: float | None = None  # median; the leaver stopped by SIGTERM
    bridge_leave_min_s: float | None = None
    plain_leave_s: float | None = None
    plain_leave_min_s: float | None = None
    steady_gap_s: float | None = None  # the bridges' longest gap of any partition with nothing happening
    plain_steady_gap_s: float | None = None  # the plain group's: the measurement's floor beside the resolution
    produced_rate: tuple[float | None, ...] = ()  # records/s the producer achieved: bridges' run, plain's
    zk_steady_packets_per_s: float | None = None  # the bridges' packets/s in mode kafka with nothing happening
    join_packets_net: tuple[float, ...] = ()  # each join's packets less the steady rate over its window


def median(values: Sequence[float | int | None]) -> float | None:
    ok = [v for v in values if v is not None]
    return round(statistics.median(ok), 4) if ok else None


def least(values: Sequence[float | int | None]) -> float | None:
    ok = [v for v in values if v is not None]
    return round(min(ok), 4) if ok else None


def pauses_of(p: Point, kind: Kind) -> tuple[float | None, ...]:
    return tuple(t.pause_s for t in p.transitions if t.kind == kind)


def with_minimums(p: Point) -> Point:
    """The point with the best of its rounds, the leaves, the resolution and the packets-per-join
    predictions filled in from its measured values."""
    predicted = predicted_join_packets(p.members, p.partitions)
    bridge_leaves, plain_leaves = pauses_of(p, Kind.BRIDGE_LEAVE), pauses_of(p, Kind.PLAIN_LEAVE)
    return replace(p, switch_pause_min_s=least(p.switches_s), rebalance_pause_min_s=least(p.rebalances_s),
                   plain_join_min_s=least(p.plain_joins_s), zk_packets_per_switch_min=least(p.packets),
                   zk_packets_per_join_min=least(p.join_packets), zk_packets_join_predicted=predicted,
                   zk_packets_join_vs_predicted=ratio(p.zk_packets_per_join, predicted),
                   zk_packets_join_square=square_join_packets(p.members, p.partitions),
                   resolution_s=resolution_s(p.partitions, p.total_rate), bridge_leave_s=median(bridge_leaves),
                   bridge_leave_min_s=least(bridge_leaves), plain_leave_s=median(plain_leaves),
                   plain_leave_min_s=least(plain_leaves))  # fmt: skip


def replace(p: Point, **changes: Any) -> Point:
    return Point(**{f.name: getattr(p, f.name) for f in fields(p)} | changes)


def point_from_json(p: dict[str, Any]) -> Point:
    tuples = {f.name for f in fields(Point) if f.type.startswith("tuple")}  # type: ignore[union-attr]
    values = {k: tuple(v) if k in tuples else v for k, v in p.items()}
    transitions = tuple(Transition.from_json(t) for t in p.get("transitions", ()))
    return Point(**values | {"transitions": transitions, "protocol": Protocol(p.get("protocol", "eager"))})


def resume_seconds(points: Sequence[Point], kind: Kind) -> list[list[float]]:
    """Per point, every partition's resume (seconds after the trigger) over the rounds of `kind`."""
    return [[r[1] for t in p.transitions if t.kind == kind for r in t.resumes] for p in points]


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


@dataclass(frozen=True)
class Check:
    """One figure beside its baseline from the same run and its goal, a ratio: `value`/`baseline` (their
    medians; `value_min`/`baseline_min` the best rounds) must be at most `goal`. `ok` None: not measured."""

    figure: str
    value: float | None
    value_min: float | None
    baseline: str
    baseline_value: float | None
    baseline_min: float | None
    goal: float
    ratio: float | None
    ratio_min: float | None
    ok: bool | None
    floor_s: float | None = None  # the same group's `steady_gap`: the machine's own gaps, for a gap's check


def check(figure: str, values: Sequence[float | None], baseline: str, baselines: Sequence[float | None],
          goal: float) -> Check:  # fmt: skip
    """Medians and bests of both sides, and whether the medians' ratio meets the goal."""
    value, base = median(values), median(baselines)
    r = ratio(value, base)
    return Check(figure, value, least(values), baseline, base, least(baselines), goal, r,
                 ratio(least(values), least(baselines)), None if r is None else r <= goal)  # fmt: skip


def _of(p: Point, kind: Kind, field: str) -> list[float | None]:
    return [getattr(t, field) for t in p.transitions if t.kind == kind]


def _staying(p: Point, who: str, kinds: Sequence[Kind], floor_s: float | None) -> Check:
    """The longest gap of a partition that stayed with its worker, over every round of `kinds`, against the
    measurement's resolution: twice the record interval (one record's interval of jitter beyond its own) or,
    when longer, the same group's steady gap (its longest gap with nothing happening, the machine's own
    jitter in the same run). A staying partition within it was never paused. Its best side is the
    shortest round's longest gap."""
    gaps = [g for k in kinds for g in _of(p, k, "staying_gap_s") if g is not None]
    limit = max(2 * (p.resolution_s or resolution_s(p.partitions, p.total_rate)), floor_s or 0.0)
    worst = max(gaps) if gaps else None
    r = ratio(worst, limit)
    return Check(f"{who}: staying partitions' longest gap", worst, least(gaps),
                 "max(2 x record interval, steady gap)", limit, limit, 1.0, r, ratio(least(gaps), limit),
                 None if r is None else r <= 1.0, floor_s)  # fmt: skip


def net_join_packets(transitions: Sequence[Transition], steady_per_s: float | None) -> tuple[float, ...]:
    """Each bridge join's packets less what the group sends anyway over as long a window (its offset
    commits and session pings at the steady rate): the packets the join itself caused."""
    if steady_per_s is None:
        return ()
    joins = [t for t in transitions if t.kind == Kind.BRIDGE_JOIN]
    return tuple(round(t.zk_packets - steady_per_s * t.window_s, 1) for t in joins)


def _packets(p: Point) -> list[Check]:
    """Packets per join against 20·M + 4·P: those the join caused (window less the steady rate), and the
    raw window's beside them, which also holds the commits and pings that fall in it."""
    predicted = [predicted_join_packets(p.members, p.partitions)]
    raw = check("ZooKeeper packets per bridge join, whole window", list(p.join_packets), "20*M + 4*P", predicted,
                1.0)  # fmt: skip
    if not p.join_packets_net:
        return [raw]
    net = check("ZooKeeper packets per bridge join, less the steady rate", list(p.join_packets_net), "20*M + 4*P",
                predicted, 1.0)  # fmt: skip
    return [net, raw]


def checks(p: Point) -> list[Check]:
    """What the size must meet: eager, a bridge joining or leaving at most a plain consumer's, a switch at
    most half a plain join; cooperative, staying partitions never paused and the moved ones at most a plain
    cooperative group's (the whole pauses beside); both, the packets per join at most 20·M + 4·P."""
    switch = check("switch", p.switches_s, "plain join", p.plain_joins_s, 0.5)  # points saved without transitions
    join = check("bridge join", p.rebalances_s, "plain join", p.plain_joins_s, 1.0)  # have these, not leaves
    leave = check("bridge leave", _of(p, Kind.BRIDGE_LEAVE, "pause_s"), "plain leave",
                  _of(p, Kind.PLAIN_LEAVE, "pause_s"), 1.0)  # fmt: skip
    if p.protocol is Protocol.EAGER:
        return [join, leave, switch, *_packets(p)]
    moved = [check(f"bridge {what}: moved partitions' pause", _of(p, bridge, "moved_pause_s"),
                   f"plain {what}: moved partitions' pause", _of(p, plain, "moved_pause_s"), 1.0)
             for what, bridge, plain in (("join", Kind.BRIDGE_JOIN, Kind.PLAIN_JOIN),
                                         ("leave", Kind.BRIDGE_LEAVE, Kind.PLAIN_LEAVE))]  # fmt: skip
    staying = [_staying(p, "bridges", (Kind.BRIDGE_JOIN, Kind.BRIDGE_LEAVE), p.steady_gap_s),
               _staying(p, "plain group", (Kind.PLAIN_JOIN, Kind.PLAIN_LEAVE), p.plain_steady_gap_s)]  # fmt: skip
    return [*staying, *moved, join, leave, switch, *_packets(p)]


def verdict(p: Point) -> dict[str, Any]:
    """The size's verdict, saved in the JSON: every check, the load average at its start and end, the
    resolution of its pauses."""
    return {"size": f"{p.members}x{p.partitions}", "protocol": p.protocol.value, "load": list(p.load),
            "resolution_s": p.resolution_s or resolution_s(p.partitions, p.total_rate), "note": p.note,
            "offered_rate": partition_rate(p.partitions, p.total_rate or TOTAL_RATE) * p.partitions,
            "produced_rate": list(p.produced_rate),
            "checks": [c.__dict__ for c in checks(p)]}  # fmt: skip


def verdict_lines(v: dict[str, Any]) -> list[str]:
    """A verdict as printed: a header, then one line per check."""
    load = " -> ".join(f"{x:.2f}" for x in v["load"]) or "?"
    produced = "/".join(f"{r:g}" for r in v.get("produced_rate", ()) if r is not None)
    rate = f"; producer {produced} of {v['offered_rate']:g} records/s" if produced else ""
    lines = [f"{v['size']} {v['protocol']} (load average {load}; resolution {v['resolution_s']} s{rate}"
             f"{'; ' + v['note'] if v['note'] else ''})"]  # fmt: skip
    for c in v["checks"]:
        mark = {True: "ok", False: "FAIL", None: "n/a"}[c["ok"]]
        floor = f"; steady gap {c['floor_s']} s" if c.get("floor_s") else ""
        lines.append(f"  {mark:<4} {c['figure']}: {c['value']} (best {c['value_min']}) vs {c['baseline']} "
                     f"{c['baseline_value']} (best {c['baseline_min']}): x{c['ratio']} (best x{c['ratio_min']}), "
                     f"goal <= x{c['goal']}{floor}")  # fmt: skip
    return lines
