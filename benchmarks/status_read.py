"""`migrator status` on a 64-member group of each dialect: two builds side by side on one cluster.

Each build is a `migrator` executable (its own venv and checkout), e.g. the main branch's beside this
checkout's. For each dialect one group is written by hand (`tests/helpers/layouts.py`: 64 members, 64
partitions, every partition owned), then, alternating builds round by round:

- `status -g G --json` as an operator runs it (wall time, Python start included, and its ZooKeeper round trips,
  counted through kazoo's public calls: `tests/helpers/round_trips.py`);
- `read_status` in that build's interpreter, ZooKeeper half only (no Kafka), `--reads` times in one process
  (wall time per call): what the group read itself costs.

Prints one table (medians). Run:
    eval $(./scripts/migrator dev-cluster up --name bench)
    .venv/bin/python -m benchmarks.status_read -z $ZOOKEEPER -b $BOOTSTRAP_SERVERS \\
        --before /path/to/other/.venv/bin/migrator --after .venv/bin/migrator
    ./scripts/migrator dev-cluster down --name bench
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.common import add_cluster_args, cluster, unique
from migrator.demo.group import create_topic
from migrator.kafka.admin import KafkaAdmin
from migrator.protocol.dialect import Dialect
from migrator.zk.client import connect
from tests.helpers.layouts import write_group
from tests.helpers.round_trips import counting_env, read_counts

READ_LOOP = """
import statistics, sys, time
from migrator.ops.status import read_status
from migrator.zk.client import connect
zk = connect(sys.argv[1])
times = []
for _ in range(int(sys.argv[3])):
    start = time.perf_counter()
    read_status(zk, sys.argv[2], None)
    times.append(time.perf_counter() - start)
print(statistics.median(times))
"""


def cli_status(build: Path, zookeeper: str, bootstrap: str, group: str, tmp: Path) -> tuple[float, int]:
    """Wall seconds and ZooKeeper round trips of one `status --json` run of `build`."""
    args = [str(build), "status", "-z", zookeeper, "-b", bootstrap, "-g", group, "--json"]
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, env=_env(tmp), timeout=120)
    seconds = time.perf_counter() - start
    assert done.returncode == 0 and json.loads(done.stdout)["partitions"], done.stderr
    return seconds, read_counts(tmp)["round_trips"]


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, **counting_env(tmp)}


def read_loop(build: Path, zookeeper: str, group: str, reads: int) -> float:
    """Median seconds of `read_status` (ZooKeeper only) in `build`'s interpreter."""
    python = build.parent / "python"
    with tempfile.TemporaryDirectory() as elsewhere:  # not this checkout: `-c` imports from the working directory
        done = subprocess.run([str(python), "-c", READ_LOOP, zookeeper, group, str(reads)], capture_output=True,
                              text=True, timeout=300, check=True, cwd=elsewhere)  # fmt: skip
    return float(done.stdout.strip())


def measure(builds: dict[str, Path], zookeeper: str, bootstrap: str, group: str, rounds: int, reads: int) -> dict:
    cli: dict[str, list[float]] = {name: [] for name in builds}
    trips: dict[str, int] = {}
    loops: dict[str, list[float]] = {name: [] for name in builds}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            for name, build in builds.items():
                seconds, trips[name] = cli_status(build, zookeeper, bootstrap, group, Path(tmp))
                cli[name].append(seconds)
                loops[name].append(read_loop(build, zookeeper, group, reads))
    return {
        name: {
            "cli_s": round(statistics.median(cli[name]), 3),
            "read_ms": round(statistics.median(loops[name]) * 1000, 2),
            "round_trips": trips[name],
        }
        for name in builds
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cluster_args(parser)
    parser.add_argument("--before", type=Path, required=True, help="the baseline build's migrator executable")
    parser.add_argument("--after", type=Path, default=Path(".venv/bin/migrator"), help="the build measured")
    parser.add_argument("--members", type=int, default=64)
    parser.add_argument("--partitions", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=7, help="CLI runs per build and dialect")
    parser.add_argument("--reads", type=int, default=30, help="read_status calls per in-process loop")
    args = parser.parse_args()
    builds = {"before": args.before.absolute(), "after": args.after.absolute()}
    with cluster(args.zookeeper, args.bootstrap_servers) as c:
        zk = connect(c.zookeeper)
        admin = KafkaAdmin(c.bootstrap_servers, {})
        topic = unique("status-read")
        create_topic(admin, zk, topic, args.partitions)
        print(f"{args.members} members, {args.partitions} partitions; medians of {args.rounds} rounds")
        print(f"{'dialect':8} {'build':7} {'status (CLI) s':>15} {'read_status ms':>15} {'round trips':>12}")
        for dialect in Dialect:
            group = unique(f"status-read-{dialect.value}")
            write_group(zk, group, topic, args.partitions, args.members, dialect)
            results = measure(builds, c.zookeeper, c.bootstrap_servers, group, args.rounds, args.reads)
            for name, r in results.items():
                print(f"{dialect.value:8} {name:7} {r['cli_s']:>15} {r['read_ms']:>15} {r['round_trips']:>12}")
        zk.stop()


if __name__ == "__main__":
    main()
