"""What every benchmark shares: a cluster (given, from the test env variables, or a dev cluster of our own,
always downed), ZooKeeper's request counter, and saving results as JSON under benchmarks/results/.

Every figure is reported next to a baseline measured in the same run on the same cluster, as a ratio, so
results from different machines compare by their ratios, not their absolute values.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from migrator.devcluster.ports import four_letter_word  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


@dataclass(frozen=True)
class Cluster:
    zookeeper: str
    bootstrap_servers: str
    mntr: Callable[[], dict[str, str]]


def _mntr_of(zookeeper: str) -> Callable[[], dict[str, str]]:
    port = int(zookeeper.split(",")[0].split("/")[0].rpartition(":")[2])

    def mntr() -> dict[str, str]:
        text = four_letter_word(port, "mntr")
        return dict(line.split("\t", 1) for line in text.splitlines() if "\t" in line)

    return mntr


def add_cluster_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--zookeeper", "-z", help="use this (loopback) ZooKeeper instead of a dev cluster")
    parser.add_argument("--bootstrap-servers", "-b", help="its brokers (with --zookeeper)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")


@contextlib.contextmanager
def cluster(zookeeper: str | None = None, bootstrap: str | None = None) -> Iterator[Cluster]:
    """The given cluster, else MIGRATOR_TEST_ZOOKEEPER/_BOOTSTRAP, else a dev cluster downed on exit."""
    zookeeper = zookeeper or os.environ.get("MIGRATOR_TEST_ZOOKEEPER")
    bootstrap = bootstrap or os.environ.get("MIGRATOR_TEST_BOOTSTRAP")
    if zookeeper and bootstrap:
        yield Cluster(zookeeper, bootstrap, _mntr_of(zookeeper))
        return
    from migrator.devcluster import DevCluster

    dev = DevCluster.start(brokers=1)
    try:
        yield Cluster(dev.zookeeper, dev.bootstrap_servers, dev.mntr)
    finally:
        dev.down()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def packets(c: Cluster) -> int:
    return int(c.mntr()["zk_packets_received"])


def ratio(value: float | None, baseline: float | None) -> float | None:
    if value is None or not baseline:
        return None
    return round(value / baseline, 3)


def save(name: str, doc: dict[str, Any]) -> Path:
    """Write benchmarks/results/<name>.json with the machine it ran on, and return the path."""
    doc = {
        "benchmark": name,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        **doc,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return path


def quiet() -> None:
    """Library chatter (kazoo reconnects, librdkafka disconnects of leaving members) is not a result."""
    import logging

    from migrator.demo.workload import QUIET_LOGGER

    for name in ("kazoo", QUIET_LOGGER, "migrator"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
