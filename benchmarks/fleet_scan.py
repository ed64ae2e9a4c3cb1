#!/usr/bin/env python3
"""Benchmark: fleet-scan throughput on Spark `local[2]` next to a single-process pipelined kazoo read.

    python -m benchmarks.fleet_scan                      # own dev cluster, 10,000 groups
    python -m benchmarks.fleet_scan --zookeeper Z --groups 2000 [--bootstrap-servers B]

Both sides scan the same synthetic fleet in the same run and classify every group. The baseline is one
process calling `read_groups` (kazoo async, pipelined per tree level) over all groups. The Spark side is
the CLI's scan: it reads only what classification needs (no offset values without Kafka) through one
socket per chunk of groups (`migrator.zk.wire`). Spark is measured excluding its start-up (steady:
a second scan on warm Python workers; first: the first scan) and in total (start-up + first scan). Prints
the ratios to the baseline and saves JSON under benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from migrator.fleet import synthetic
from migrator.fleet.classify import classify
from migrator.fleet.scan import CHUNK_GROUPS, KAFKA_TIMEOUT_S, FleetKafka, ScanSettings, list_groups, now_ms
from migrator.zk.client import connect
from migrator.zk.group_reader import read_groups

RESULTS = Path(__file__).resolve().parent / "results"


def baseline(zookeeper: str, bootstrap: str | None, groups: list[str], settings: ScanSettings) -> tuple[float, dict]:
    """One process, one kazoo client: pipelined reads of every group, then the same classification."""
    started = time.monotonic()
    zk = connect(zookeeper)
    reader = FleetKafka.connect(bootstrap, None, KAFKA_TIMEOUT_S) if bootstrap else None
    statuses: dict[str, int] = {}
    try:
        for i in range(0, len(groups), CHUNK_GROUPS):
            views = list(read_groups(zk, groups[i : i + CHUNK_GROUPS]).values())
            facts = reader.read(views) if reader is not None else {}
            for v in views:
                status = classify(v, facts.get(v.group), settings.now_ms, settings.stable_for_ms, None).status
                statuses[status.value] = statuses.get(status.value, 0) + 1
    finally:
        if reader is not None:
            reader.close()
        zk.stop()
        zk.close()
    return time.monotonic() - started, statuses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zookeeper", "-z", help="use this ZooKeeper instead of starting a dev cluster")
    parser.add_argument("--bootstrap-servers", "-b", help="also read Kafka facts (both sides)")
    parser.add_argument("--groups", "-n", type=int, default=10_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions", type=int, help="Spark partitions (default: the CLI's choice)")
    parser.add_argument("--with-kafka", action="store_true", help="with an own dev cluster: read Kafka facts too")
    args = parser.parse_args()
    os.environ.setdefault("MIGRATOR_NO_PROGRESS", "1")

    cluster = None
    if args.zookeeper is None:
        from migrator.devcluster import DevCluster

        cluster = DevCluster.start(brokers=1)
        args.zookeeper = cluster.zookeeper
        if args.with_kafka:
            args.bootstrap_servers = cluster.bootstrap_servers
    prefix = f"bench{int(time.time())}"
    writer = connect(args.zookeeper, session_timeout_s=60)
    result: dict = {}
    try:
        t0 = time.monotonic()
        synthetic.make_fleet(writer, args.groups, prefix=prefix, now_ms=now_ms())
        write_s = time.monotonic() - t0
        groups = [g for g in list_groups(writer) if g.startswith(prefix + "-")]
        settings = ScanSettings(bootstrap={args.zookeeper: args.bootstrap_servers}, stable_for_ms=0, now_ms=now_ms())
        base_s, base_statuses = baseline(args.zookeeper, args.bootstrap_servers, groups, settings)

        from migrator.fleet.pipeline import run_scan, spark_session

        items = [(args.zookeeper, g) for g in groups]
        t0 = time.monotonic()
        spark = spark_session(args.master, "fleet-scan-benchmark")
        startup_s = time.monotonic() - t0
        try:
            t0 = time.monotonic()
            rows = run_scan(spark, items, settings, args.partitions, progress=False)
            first_s = time.monotonic() - t0
            t0 = time.monotonic()
            rows = run_scan(spark, items, settings, args.partitions, progress=False)
            steady_s = time.monotonic() - t0
        finally:
            spark.stop()
        spark_statuses: dict[str, int] = {}
        for r in rows:
            spark_statuses[r.status] = spark_statuses.get(r.status, 0) + 1
        n = len(groups)
        result = {
            "groups": n,
            "master": args.master,
            "kafka": bool(args.bootstrap_servers),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "write_s": round(write_s, 2),
            "write_groups_per_s": round(n / write_s, 1),
            "baseline_s": round(base_s, 2),
            "baseline_groups_per_s": round(n / base_s, 1),
            "spark_startup_s": round(startup_s, 2),
            "spark_first_scan_s": round(first_s, 2),
            "spark_steady_scan_s": round(steady_s, 2),
            "spark_steady_groups_per_s": round(n / steady_s, 1),
            "spark_first_groups_per_s": round(n / first_s, 1),
            "spark_total_groups_per_s": round(n / (startup_s + first_s), 1),
            "ratio_steady_to_baseline": round(base_s / steady_s, 2),
            "ratio_first_to_baseline": round(base_s / first_s, 2),
            "ratio_total_to_baseline": round(base_s / (startup_s + first_s), 2),
            "statuses_agree": base_statuses == spark_statuses,
            "statuses": spark_statuses,
        }
    finally:
        t0 = time.monotonic()
        synthetic.remove_fleet(writer, prefix)
        result["cleanup_s"] = round(time.monotonic() - t0, 1)
        writer.stop()
        writer.close()
        if cluster is not None:
            cluster.down()
    if "groups" in result:
        print(
            f"{result['groups']} groups, {args.master}: baseline {result['baseline_groups_per_s']} groups/s; "
            f"Spark steady {result['spark_steady_groups_per_s']} groups/s (x{result['ratio_steady_to_baseline']}), "
            f"first scan x{result['ratio_first_to_baseline']}, with start-up {result['spark_total_groups_per_s']} "
            f"groups/s (x{result['ratio_total_to_baseline']}); statuses agree: {result['statuses_agree']}"
        )
        RESULTS.mkdir(parents=True, exist_ok=True)
        out = RESULTS / f"fleet_scan-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
        out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
        print(f"saved {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
