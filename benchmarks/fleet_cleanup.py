#!/usr/bin/env python3
"""Benchmark: `fleet-scan --cleanup` cleaning N groups in waves, beside a plain scan of the same fleet.

    python -m benchmarks.fleet_cleanup                   # own dev cluster, 1,000 abandoned groups
    python -m benchmarks.fleet_cleanup -n 1000 --wave-size 100

Writes N groups that nobody uses (the synthetic `orphaned` shape: offsets only), waits past
`--abandoned-after`, then runs the CLI as an operator does, each in its own process with Spark `local[2]`:
a plain scan, then `--cleanup --abandoned --execute` (a scan, then the waves). Both times include Spark's
start-up; the difference is the cleanup's own cost. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from migrator.fleet import synthetic
from migrator.fleet.scan import now_ms
from migrator.zk.client import connect


def _cli(*args: str) -> float:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "migrator", "fleet-scan", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"fleet-scan {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", "-n", type=int, default=1000)
    parser.add_argument("--wave-size", type=int, default=100)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    from migrator.devcluster import DevCluster

    cluster = DevCluster.start(brokers=1)
    prefix = f"clean{int(time.time())}"
    chroot = f"/bench-{prefix}"
    try:
        root = connect(cluster.zookeeper)
        root.ensure_path(f"{chroot}/consumers")
        ensemble = f"{cluster.zookeeper}{chroot}"
        writer = connect(ensemble, session_timeout_s=60)
        synthetic.make_fleet(writer, args.groups, prefix=prefix, now_ms=now_ms(), only="orphaned")
        time.sleep(3)
        common = ["-z", ensemble, "-b", cluster.bootstrap_servers, "--spark-master", args.master,
                  "--abandoned-after", "2s", "--no-progress"]  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            plain_s = _cli(*common, "--output", tmp)
            clean_s = _cli(*common, "--cleanup", "--abandoned", "--execute", "--wave-size", str(args.wave_size),
                           "--archive-dir", f"{tmp}/archives", "--plan-file", f"{tmp}/plan.json")  # fmt: skip
            left = len(writer.get_children("/consumers"))
        print(json.dumps({"groups": args.groups, "wave_size": args.wave_size, "master": args.master,
                          "cpus": os.cpu_count(), "plain_scan_s": round(plain_s, 1),
                          "scan_and_cleanup_s": round(clean_s, 1), "groups_left": left}))  # fmt: skip
        writer.stop()
        root.delete(chroot, recursive=True)
        root.stop()
    finally:
        cluster.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
