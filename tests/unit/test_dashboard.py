"""The Grafana dashboard only charts metrics the connector really exposes (and charts all of them)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import REGISTRY

import migrator.metrics  # noqa: F401 - registers the collectors

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"


def exposed_samples() -> set[str]:
    names = set()
    for family in REGISTRY.collect():
        if family.name.startswith("migrator_"):
            suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}.get(family.type, [""])
            names |= {family.name + s for s in suffixes}
    return names


def test_dashboard_queries_name_only_exposed_metrics_and_cover_every_family() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    used = {m for e in exprs for m in re.findall(r"migrator_[a-z_]+", e)}
    exposed = exposed_samples()
    assert used <= exposed, used - exposed
    families = {re.sub(r"_(total|bucket|sum|count)$", "", n) for n in used}
    every = {f.name for f in REGISTRY.collect() if f.name.startswith("migrator_")}
    assert families == every
