"""Every benchmark in one run, on one cluster: `python -m benchmarks.run_all [--quick]`.

Starts one dev cluster (or uses --zookeeper/--bootstrap-servers, or MIGRATOR_TEST_ZOOKEEPER/_BOOTSTRAP),
runs switch pause, rolling restart, throughput, ZooKeeper load, cost and the group-size curves, then the
fleet-scan benchmark (its own process, at a small size) and the fleet-scale one (its own ZooKeeper servers and
Spark standalone cluster), and saves each result under benchmarks/results/.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import cost, curves, rolling_restart, switch_pause, throughput, zk_load
from benchmarks.common import add_cluster_args, cluster

ROOT = Path(__file__).resolve().parents[1]

FLEET_GROUPS_QUICK = 2000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cluster_args(parser)
    names = ["switch_pause", "rolling_restart", "throughput", "zk_load", "cost", "curves", "fleet_scan", "fleet_scale"]
    parser.add_argument("--only", choices=names, action="append")
    args = parser.parse_args(argv)
    wanted = set(args.only or names)
    failed: list[str] = []
    with cluster(args.zookeeper, args.bootstrap_servers) as c:
        benchmarks = (
            ("switch_pause", switch_pause),
            ("rolling_restart", rolling_restart),
            ("throughput", throughput),
            ("zk_load", zk_load),
            ("cost", cost),
            ("curves", curves),
        )
        for name, module in benchmarks:
            if name not in wanted:
                continue
            started = time.monotonic()
            print(f"\n##### {name}", flush=True)
            try:
                module.run(c, quick=args.quick)
            except Exception as exc:  # one failing benchmark must not hide the others' results
                print(f"{name} failed: {exc!r}", flush=True)
                failed.append(name)
            print(f"##### {name} took {time.monotonic() - started:.0f}s", flush=True)
        if "fleet_scan" in wanted:
            print("\n##### fleet_scan", flush=True)
            cmd = [sys.executable, "-m", "benchmarks.fleet_scan", "--zookeeper", c.zookeeper]
            cmd += ["--groups", str(FLEET_GROUPS_QUICK)]
            if subprocess.run(cmd, cwd=ROOT, check=False).returncode != 0:
                failed.append("fleet_scan")
    if "fleet_scale" in wanted:  # its own ZooKeeper servers and Spark standalone cluster
        print("\n##### fleet_scale", flush=True)
        cmd = [sys.executable, "-m", "benchmarks.fleet_scale", *(["--quick"] if args.quick else [])]
        if subprocess.run(cmd, cwd=ROOT, check=False).returncode != 0:
            failed.append("fleet_scale")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
