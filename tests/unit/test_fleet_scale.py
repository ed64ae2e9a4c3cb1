"""The fleet-scale benchmark's pure parts: how the fleet grows over sizes and ensembles, the line fit, and
reading the CLI's scan time."""

from __future__ import annotations

import re

import pytest

from benchmarks.fleet_scale import (
    app_id,
    expected_statuses,
    include_regex,
    linear_fit,
    plan_batches,
    scanned_seconds,
    task_window,
)


def test_batches_grow_the_fleet_to_each_size_spread_evenly_over_the_ensembles() -> None:
    steps = plan_batches([25_000, 50_000, 100_001], 4, tag="t")
    totals, running = [], 0
    for batches in steps:
        running += sum(b.groups for b in batches)
        totals.append(running)
        assert max(b.groups for b in batches) - min(b.groups for b in batches) <= 1
        assert sorted(b.ensemble for b in batches) == [0, 1, 2, 3]
    assert totals == [25_000, 50_000, 100_001]
    every = [b for batches in steps for b in batches]
    assert len({b.prefix for b in every}) == len(every)
    assert len({b.seed for b in every}) == len(every)


def test_a_size_step_smaller_than_the_ensembles_leaves_the_last_ones_out() -> None:
    assert [b.ensemble for b in plan_batches([2], 4, tag="t")[0]] == [0, 1]


@pytest.mark.parametrize("sizes", [[], [0], [50, 50], [50, 25]])
def test_sizes_must_be_positive_and_ascending(sizes: list[int]) -> None:
    with pytest.raises(ValueError):
        plan_batches(sizes, 2, tag="t")


def test_the_include_regex_selects_exactly_the_batches_groups() -> None:
    first, second = plan_batches([4, 8], 2, tag="t")
    regex = re.compile(include_regex(first))
    assert all(regex.search(f"{b.prefix}-000001") for b in first)
    assert not any(regex.search(f"{b.prefix}-000001") for b in second)
    assert not regex.search(f"x{first[0].prefix}-000001")


def test_expected_statuses_count_every_group_once() -> None:
    batches = [b for step in plan_batches([50, 120], 3, tag="t") for b in step]
    counts = expected_statuses(batches)
    assert sum(counts.values()) == 120
    assert {"LEGACY", "MIGRATING", "BLOCKED"} <= set(counts)


def test_a_straight_line_fits_exactly_and_noise_lowers_r2() -> None:
    exact = linear_fit([1, 2, 4], [3.0, 5.0, 9.0])
    assert exact.slope == pytest.approx(2.0)
    assert exact.intercept == pytest.approx(1.0)
    assert exact.r2 == pytest.approx(1.0)
    assert linear_fit([1, 2, 4], [3.0, 7.0, 8.0]).r2 < 0.95
    assert linear_fit([1, 2], [5.0, 5.0]).r2 == 1.0
    with pytest.raises(ValueError):
        linear_fit([1, 1], [2.0, 3.0])


def test_the_scan_time_is_read_from_the_cli_summary() -> None:
    summary = "status  groups\nLEGACY  3\n\nscanned 25000 groups in 123.4s (203 groups/s)\ndry run: 0 READY groups"
    assert scanned_seconds(summary) == pytest.approx(123.4)
    assert scanned_seconds("no scan here") is None


def test_the_executors_task_window_spans_every_executors_tasks() -> None:
    one = (
        "26/11/26 00:30:29 INFO StreamingShuffleManager: Using StreamingShuffleManager\n"
        "26/11/26 00:32:54 INFO Executor: Running task 0.0 in stage 0.0 (TID 0)\n"
        "26/11/26 00:34:27 INFO Executor: Finished task 0.0 in stage 0.0 (TID 0). 44573 bytes result sent to driver\n"
    )
    two = (
        "26/11/26 00:32:50 INFO Executor: Running task 1.0 in stage 0.0 (TID 1)\n"
        "26/11/26 00:35:01 INFO Executor: Finished task 1.0 in stage 0.0 (TID 1). 44 bytes result sent to driver\n"
    )
    assert task_window([one, two]) == pytest.approx(131.0)
    assert task_window(["nothing ran"]) is None


def test_the_app_id_is_read_from_the_driver_log() -> None:
    log = "26/11/26 00:29:35 INFO StandaloneSchedulerBackend: Connected"
    log += " to Spark cluster with app ID app-20261126-0000\n"
    assert app_id(log) == "app-20261126-0000"
    assert app_id("no cluster") is None
