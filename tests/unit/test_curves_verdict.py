"""The size curves' verdict: every figure beside its same-run baseline and its goal, per protocol."""

from __future__ import annotations

import json
from dataclasses import asdict

from benchmarks.curves import suffix_of
from benchmarks.curves_model import (
    Kind,
    Point,
    Protocol,
    Transition,
    achieved_rate,
    checks,
    net_join_packets,
    point_from_json,
    replace,
    resolution_s,
    steady_gap,
    verdict,
    verdict_lines,
    with_minimums,
)
from migrator.observe.records import Processed


def step(kind: Kind, pause_s: float | None, packets: int = 0, gap: float | None = None,
         moved: float | None = None) -> Transition:  # fmt: skip
    return Transition(kind, pause_s, packets, (), (), {}, 1.0, 3, 1, gap, moved)


def pauses(transitions: tuple[Transition, ...], kind: Kind) -> tuple[float | None, ...]:
    return tuple(t.pause_s for t in transitions if t.kind == kind)


def eager_point() -> Point:
    transitions = (
        step(Kind.SWITCH, 0.2), step(Kind.SWITCH, 0.4), step(Kind.SWITCH, 9.0),
        step(Kind.BRIDGE_JOIN, 0.5, 100), step(Kind.BRIDGE_LEAVE, 1.0), step(Kind.BRIDGE_JOIN, 0.7, 200),
        step(Kind.BRIDGE_LEAVE, 3.0), step(Kind.BRIDGE_JOIN, 0.6, 150), step(Kind.BRIDGE_LEAVE, 1.2),
        step(Kind.PLAIN_JOIN, 1.0), step(Kind.PLAIN_LEAVE, 1.0), step(Kind.PLAIN_JOIN, 1.2),
        step(Kind.PLAIN_LEAVE, 1.5), step(Kind.PLAIN_JOIN, None), step(Kind.PLAIN_LEAVE, 0.9),
    )  # fmt: skip
    return Point(8, 128, join_packets=(100, 200, 150), transitions=transitions, load=(1.0, 2.0),
                 switches_s=pauses(transitions, Kind.SWITCH), rebalances_s=pauses(transitions, Kind.BRIDGE_JOIN),
                 plain_joins_s=pauses(transitions, Kind.PLAIN_JOIN),
                 produced_rate=(3190.0, 3201.5))  # fmt: skip


def test_eager_figures_stand_beside_their_baselines_with_their_goals() -> None:
    by_figure = {c.figure: c for c in checks(with_minimums(eager_point()))}
    packets_figure = "ZooKeeper packets per bridge join, whole window"
    assert list(by_figure) == ["bridge join", "bridge leave", "switch", packets_figure]
    join = by_figure["bridge join"]
    assert (join.value, join.value_min, join.baseline_value, join.baseline_min) == (0.6, 0.5, 1.1, 1.0)
    assert (join.ratio, join.ratio_min, join.goal, join.ok) == (0.545, 0.5, 1.0, True)
    leave = by_figure["bridge leave"]
    assert (leave.value, leave.baseline_value, leave.ratio, leave.ok) == (1.2, 1.0, 1.2, False)
    switch = by_figure["switch"]  # a switch's goal is half a plain join
    assert (switch.value, switch.goal, switch.ratio, switch.ok) == (0.4, 0.5, 0.364, True)
    packets = by_figure[packets_figure]
    assert (packets.value, packets.baseline_value, packets.ok) == (150, 20 * 8 + 4 * 128, True)


def test_a_figure_without_a_measured_side_is_not_judged() -> None:
    point = with_minimums(Point(2, 16, rebalances_s=(0.5,), transitions=(step(Kind.BRIDGE_JOIN, 0.5),)))
    join = checks(point)[0]
    assert (join.figure, join.baseline_value, join.ratio, join.ok) == ("bridge join", None, None, None)


def cooperative_point(staying_gap: float) -> Point:
    transitions = (
        step(Kind.BRIDGE_JOIN, 0.9, gap=0.02, moved=0.8), step(Kind.BRIDGE_LEAVE, 1.0, gap=staying_gap, moved=0.9),
        step(Kind.PLAIN_JOIN, 1.0, gap=0.03, moved=1.0), step(Kind.PLAIN_LEAVE, 1.0, gap=0.01, moved=0.6),
    )  # fmt: skip
    return with_minimums(Point(2, 16, transitions=transitions, protocol=Protocol.COOPERATIVE, steady_gap_s=0.012,
                               plain_steady_gap_s=0.025, rebalances_s=(0.9,), plain_joins_s=(1.0,)))  # fmt: skip


def test_cooperative_staying_partitions_are_judged_against_the_record_interval() -> None:
    assert resolution_s(16) == 0.01 and resolution_s(1024) == 0.32  # at most 100 records/s, 3,200 over a topic
    by_figure = {c.figure: c for c in checks(cooperative_point(staying_gap=0.015))}
    staying = by_figure["bridges: staying partitions' longest gap"]
    assert (staying.value, staying.value_min, staying.baseline_value, staying.ratio, staying.ok) == (
        0.02, 0.015, 0.02, 1.0, True)  # fmt: skip
    assert (staying.floor_s, by_figure["plain group: staying partitions' longest gap"].floor_s) == (0.012, 0.025)
    assert by_figure["plain group: staying partitions' longest gap"].value == 0.03
    assert verdict_lines(verdict(cooperative_point(0.015)))[1].endswith("goal <= x1.0; steady gap 0.012 s")
    assert not by_figure["plain group: staying partitions' longest gap"].ok
    moved = by_figure["bridge leave: moved partitions' pause"]
    assert (moved.value, moved.baseline_value, moved.ratio, moved.ok) == (0.9, 0.6, 1.5, False)
    assert by_figure["bridge join: moved partitions' pause"].ok
    paused = {c.figure: c for c in checks(cooperative_point(staying_gap=0.5))}
    assert paused["bridges: staying partitions' longest gap"].ok is False


def test_the_verdict_survives_the_json_and_keeps_each_protocol_apart() -> None:
    point = with_minimums(eager_point())
    saved = point_from_json(json.loads(json.dumps(asdict(point))))
    assert saved == point and (saved.bridge_leave_s, saved.plain_leave_min_s) == (1.2, 0.9)
    v = json.loads(json.dumps(verdict(saved)))
    assert (v["size"], v["protocol"], v["load"], v["resolution_s"]) == ("8x128", "eager", [1.0, 2.0], 0.04)
    lines = verdict_lines(v)
    assert (
        lines[0] == "8x128 eager (load average 1.00 -> 2.00; resolution 0.04 s; producer 3190/3201.5 of 3200 records/s)"
    )
    assert achieved_rate([(0, 10), (500_000_000, 1010), (2_000_000_000, 6010)]) == 3000.0
    assert achieved_rate([(0, 10)]) is None
    assert lines[2].startswith("  FAIL bridge leave: 1.2 (best 1.0) vs plain leave 1.0 (best 0.9): x1.2")
    assert [suffix_of(p, q) for p in Protocol for q in (False, True)] == [
        "", "-quick", "-cooperative", "-cooperative-quick"]  # fmt: skip


def test_points_saved_before_leaves_and_protocols_still_load() -> None:
    old = {"members": 2, "partitions": 16, "transitions": [
        {"kind": "switch", "pause_s": 0.1, "zk_packets": 3, "resumes": [[0, 0.1, "a", "b"]], "backlog": [],
         "cpu_s": {}, "window_s": 1.0}]}  # fmt: skip
    point = with_minimums(point_from_json(old | {"switches_s": [0.1, 0.3], "plain_joins_s": [1.0]}))
    assert point.protocol is Protocol.EAGER and point.transitions[0].staying is None
    switch = checks(point)[2]  # before transitions were saved, a point kept its pauses in its own fields
    assert (switch.figure, switch.value, switch.baseline_value) == ("switch", 0.2, 1.0)


def test_the_steady_gap_is_the_longest_any_partition_waited_in_a_quiet_window() -> None:
    ms = 1_000_000
    processed = [Processed("a", "0", "t", p, o, at * ms, at * ms + ms) for p, o, at in
                 [(0, 0, 0), (0, 1, 100), (0, 2, 130), (1, 0, 90), (1, 1, 150), (1, 2, 400)]]  # fmt: skip
    assert steady_gap(processed, 95 * ms, 200 * ms) == 0.099  # 1 -> 100 ended in the window (91 -> 150 too)
    assert steady_gap(processed, 120 * ms, 200 * ms) == 0.059  # 91 -> 150, from a record before the window
    assert steady_gap(processed, 500 * ms, 600 * ms) is None


def test_packets_per_join_are_judged_less_the_groups_steady_rate_over_each_window() -> None:
    def join(packets: int, window_s: float) -> Transition:
        return Transition(Kind.BRIDGE_JOIN, 0.3, packets, (), (), {}, window_s)

    joins = (join(900, 2.0), join(1000, 3.0), Transition(Kind.SWITCH, 0.1, 500, (), (), {}, 1.0))
    assert net_join_packets(joins, 100.0) == (700.0, 700.0)
    assert net_join_packets(joins, None) == ()
    p = Point(8, 128, join_packets=(900, 1000), join_packets_net=(700.0, 700.0))
    net, raw = [c for c in checks(p) if "packets" in c.figure]
    assert (net.value, net.baseline_value, net.ok) == (700.0, 672, False)
    assert (raw.value, raw.ok) == (950.0, False)
    assert [c.ok for c in checks(replace(p, join_packets_net=(600.0, 650.0))) if "packets" in c.figure] == [True, False]
