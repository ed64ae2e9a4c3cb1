"""The group-size curves' fit: the README's extrapolation to 1,000 members and 10,000 partitions uses it."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from benchmarks.curves import BY_MEMBERS, BY_PARTITIONS, JOIN
from benchmarks.curves_model import (
    Kind,
    Point,
    fit,
    median,
    point_from_json,
    predict,
    resume_seconds,
    transition,
    with_minimums,
)
from migrator.observe.records import Processed


def test_the_fit_recovers_a_linear_law_of_members_and_partitions() -> None:
    sizes = [(2, 16), (4, 64), (8, 128), (16, 512), (32, 1024)]
    points = [Point(m, p, zk_packets_per_switch=20 + 3 * m + 0.5 * p) for m, p in sizes]
    coef = fit(points, "zk_packets_per_switch")
    assert coef == pytest.approx({"1": 20.0, "members": 3.0, "partitions": 0.5}, abs=1e-6)
    assert predict(coef, 1000, 10000) == pytest.approx(20 + 3000 + 5000)


def test_points_without_the_figure_are_left_out_and_too_few_give_no_fit() -> None:
    points = [Point(2, 16, switch_pause_s=1.0), Point(4, 64), Point(8, 128, switch_pause_s=2.0)]
    assert fit(points, "switch_pause_s") is None
    assert median([None, 3.0, 1.0]) == 2.0
    assert median([None]) is None


def test_the_join_fit_has_a_quadratic_members_term() -> None:
    sizes = [(2, 16), (4, 64), (8, 128), (16, 512), (32, 1024)]
    points = [Point(m, p, zk_packets_per_join=7 + 2 * m * m + 0.25 * p) for m, p in sizes]
    coef = fit(points, "zk_packets_per_join", JOIN)
    assert coef == pytest.approx({"1": 7.0, "members^2": 2.0, "partitions": 0.25}, abs=1e-6)
    assert predict(coef, 1000, 10000) == pytest.approx(7 + 2_000_000 + 2500)


def test_a_pause_fits_against_one_size_measure_at_a_time() -> None:
    points = [Point(m, 32 * m, switch_pause_min_s=0.5 + 0.01 * m) for m in (2, 4, 8, 16, 32)]
    assert fit(points, "switch_pause_min_s", BY_MEMBERS) == pytest.approx({"1": 0.5, "members": 0.01})
    assert predict(fit(points, "switch_pause_min_s", BY_PARTITIONS), 1000, 10000) == pytest.approx(0.5 + 10000 / 3200)


def test_a_transition_accounts_for_every_partition_and_the_backlog_around_its_trigger() -> None:
    ms = 1_000_000
    starts = [("a", 0, 0, 5), ("a", 0, 1, 20), ("b", 0, 2, 60), ("b", 1, 0, 30)]
    processed = [Processed(m, "0", "t", p, o, at * ms, at * ms + 1) for m, p, o, at in starts]
    produced = [(1, 1), (15 * ms, 3), (40 * ms, 4), (70 * ms, 4), (2_000 * ms, 9)]
    t = transition(Kind.SWITCH, 10 * ms, 100 * ms, 0.05, 42, processed, produced, {"a": 0.1}, 0.09)
    assert t.resumes == ((0, 0.05, "a/0", "b/0"), (1, 0.02, "b/0", "b/0"))
    assert t.backlog == ((-0.01, 1), (0.005, 2), (0.03, 1), (0.06, 0))  # from 0.5 s before, to the end
    point = Point(2, 16, zk_packets_per_join=130.0, transitions=(t,))
    saved = point_from_json(json.loads(json.dumps(asdict(with_minimums(point)))))
    assert saved.transitions == (t,)
    assert (saved.zk_packets_join_predicted, saved.zk_packets_join_vs_predicted) == (20 * 2 + 4 * 16, 1.25)
    assert saved.zk_packets_join_square == (10 * 4 + 4 * 16, 16 * 4 + 6 * 16)
    assert resume_seconds([saved], Kind.SWITCH) == [[0.05, 0.02]] and resume_seconds([saved], Kind.PLAIN_JOIN) == [[]]
