"""Summary, output formats and the option parsing of fleet-scan."""

from __future__ import annotations

import csv
import io
import json

import pytest

from migrator.cli.common import parse_duration_ms
from migrator.errors import UsageError
from migrator.fleet import report
from migrator.fleet.model import FleetRow
from migrator.fleet.scan import group_filter, pair_bootstrap, split_ensembles
from migrator.fleet.synthetic import SHAPES, plan_fleet

ROWS = [
    FleetRow("zk", "a", "READY", []),
    FleetRow("zk", "b", "BLOCKED", ["not-stable: 3s ago", "kafka-unchecked: x"]),
    FleetRow("zk", "c", "BLOCKED", ["not-stable: 9s ago"]),
    FleetRow("zk", "d", "LEGACY", ["legacy-members: 2 of 2"]),
]


def test_summary_counts_every_status_and_ranks_blocked_reasons():
    assert report.counts(ROWS)["BLOCKED"] == 2 and report.counts(ROWS)["KAFKA"] == 0
    assert report.top_reasons(ROWS) == [("not-stable", 2), ("kafka-unchecked", 1)]
    text = report.summary(ROWS, 2.0)
    assert "READY" in text and "not-stable" in text and "2 groups/s" in text


def test_formats(tmp_path):
    rows = list(csv.DictReader(io.StringIO(report.to_csv(ROWS))))
    assert rows[1]["reasons"] == "not-stable: 3s ago; kafka-unchecked: x"
    lines = [json.loads(x) for x in report.to_json(ROWS).splitlines()]
    assert lines[2]["reasons"] == ["not-stable: 9s ago"]
    path = report.write_rows(ROWS, tmp_path, "table")
    assert "LEGACY" in path.read_text()
    with pytest.raises(UsageError):
        report.write_rows(ROWS, tmp_path, "xml")


def test_ensembles_and_bootstrap():
    assert split_ensembles(["a:1,b:1/kafka;c:1", "d:1"]) == ["a:1,b:1/kafka", "c:1", "d:1"]
    with pytest.raises(UsageError):
        split_ensembles([" ; "])
    assert pair_bootstrap(["z1", "z2"], "k:9") == {"z1": "k:9", "z2": "k:9"}
    assert pair_bootstrap(["z1", "z2"], "k1:9;k2:9") == {"z1": "k1:9", "z2": "k2:9"}
    assert pair_bootstrap(["z1"], None) == {"z1": None}
    with pytest.raises(UsageError):
        pair_bootstrap(["z1", "z2"], "k1;k2;k3")


def test_filters_and_durations():
    keep = group_filter("^orders", "-test$")
    assert keep("orders-1") and not keep("orders-test") and not keep("payments")
    with pytest.raises(UsageError):
        group_filter("(", None)
    assert parse_duration_ms("30m", "x") == 1_800_000 and parse_duration_ms("90", "x") == 90_000
    assert parse_duration_ms("0s", "x") == 0
    with pytest.raises(UsageError):
        parse_duration_ms("soon", "x")


def test_synthetic_plan_is_deterministic_and_covers_every_shape():
    a, b = plan_fleet(2000, "f", seed=1), plan_fleet(2000, "f", seed=1)
    assert a.shapes == b.shapes
    assert {s.shape for s in a.shapes.values()} == set(SHAPES)
    for shape in a.shapes.values():
        if shape.shape == "migrating":
            assert shape.legacy and shape.bridges and not set(shape.legacy) & set(shape.bridges)
