"""Switch pause of bridge connectors against a plain Kafka rebalance, with one pause definition for both.

    python -m benchmarks.switch_pause [--quick] [--zookeeper Z --bootstrap-servers B]

For each size (4 bridges x 2 streams on 16 partitions, 16 x 4 on 128) a group of bridges is switched
between zookeeper and kafka 10 times with `set-mode` (preflight included, as an operator would run it); the
baseline is a group of N plain confluent-kafka consumers on a topic of the same size that one more plain
consumer joins, 10 times. Every member, bridge or plain, runs in its own process (as deployed), so
neither side pays for the other's interpreter. Both pauses come from `migrator.observe.pause` over what
was processed: from the trigger (the mode node's mtime; the moment the joining process asks to join)
until the last partition is processed again by its new owner. A round-robin producer gives every
partition a record every `1000 / per_partition_rate` ms: the resolution.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.common import Cluster, Size, add_cluster_args, close_group, cluster, group_driver, join, ratio, save
from migrator.demo.group import wait_for
from migrator.demo.workload import quiet_libraries
from migrator.observe.pause import summary
from migrator.protocol.codecs import Mode

GOAL = 1.5  # median switch pause at most 1.5x the plain rebalance

SIZES = [Size(4, 2, 16), Size(16, 4, 128)]
QUICK_SIZES = [Size(4, 2, 16)]


def run_group(c: Cluster, size: Size, rounds: int, plain: bool, log_dir: str | None) -> list[float | None]:
    """`rounds` measured transitions: mode switches of a bridge group, or joins of one more plain consumer."""
    d, producer, _ = group_driver(c, size, "pause-plain" if plain else "pause-bridge", log_dir)
    producer.start()
    try:
        for i in range(size.members):
            d.start("plain" if plain else "bridge", f"m{i}")
        wait_for(d.converged, 90.0, "the group to own every partition")
        since = time.time_ns()
        wait_for(lambda: len(d.log.resumed_since(since)) >= size.partitions, 60.0, "processing", 0.01)
        measured: list[float | None] = []
        for n in range(rounds):
            if plain:
                name = f"joiner{n}"
                step = d.step("baseline", f"plain consumer {name} joins", lambda name=name: join(d, "plain", name))
                measured.append(step.pause_s)
                d.step("baseline", f"plain consumer {name} leaves", lambda name=name: d.stop(name))
            else:
                target = Mode.KAFKA if n % 2 == 0 else Mode.ZOOKEEPER
                measured.append(d.set_mode(target, "switch").pause_s)
        return measured
    finally:
        producer.stop()
        close_group(d)


def _stats(values: list[float | None]) -> dict[str, Any]:
    ok = [v for v in values if v is not None]
    s = summary(ok)
    return {"pauses_s": [round(v, 4) if v is not None else None for v in values], "unresolved": len(values) - len(ok),
            "median_s": round(s["median_s"], 4), "max_s": round(s["max_s"], 4)}  # fmt: skip


def measure(c: Cluster, size: Size, rounds: int = 10, log_dir: str | None = None) -> dict[str, Any]:
    print(f"== {size.members} bridges x {size.streams} streams on {size.partitions} partitions", flush=True)
    switch = _stats(run_group(c, size, rounds, plain=False, log_dir=log_dir))
    print(f"== baseline: one plain consumer joins {size.members} plain consumers ({size.partitions} partitions)",
          flush=True)  # fmt: skip
    base = _stats(run_group(c, size, rounds, plain=True, log_dir=None))
    median_ratio = ratio(switch["median_s"], base["median_s"])
    return {
        "size": asdict(size),
        "switch": switch,
        "baseline_plain_join": base,
        "median_ratio": median_ratio,
        "max_ratio": ratio(switch["max_s"], base["max_s"]),
        "goal_median_ratio": GOAL,
        "goal_met": median_ratio is not None and median_ratio <= GOAL,
    }


def run(c: Cluster, quick: bool = False, sizes: list[Size] | None = None, log_dir: str | None = None) -> dict[str, Any]:
    quiet_libraries()
    rounds = 4 if quick else 10
    results = [measure(c, s, rounds, log_dir) for s in (sizes or (QUICK_SIZES if quick else SIZES))]
    for r in results:
        s = r["size"]
        print(f"switch pause {s['members']}x{s['streams']} on {s['partitions']}: median {r['switch']['median_s']:.3f}s "
              f"max {r['switch']['max_s']:.3f}s; plain join median {r['baseline_plain_join']['median_s']:.3f}s "
              f"max {r['baseline_plain_join']['max_s']:.3f}s; ratio median {r['median_ratio']}x "
              f"max {r['max_ratio']}x (goal <= {GOAL}x: {'met' if r['goal_met'] else 'NOT met'})")  # fmt: skip
    doc = {"definition": __doc__.strip().split("\n\n")[-1], "rounds": rounds, "results": results}
    print(f"saved {save('switch_pause' + ('-quick' if quick else ''), doc)}")
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cluster_args(parser)
    parser.add_argument("--size", help="one size as MEMBERSxSTREAMSxPARTITIONS, e.g. 8x2x32")
    parser.add_argument("--member-logs", metavar="DIR", help="write each bridge's rebalance log (phase timings) here")
    args = parser.parse_args(argv)
    if args.member_logs:
        Path(args.member_logs).mkdir(parents=True, exist_ok=True)
    sizes = None
    if args.size:
        m, s, p = (int(x) for x in args.size.split("x"))
        sizes = [Size(m, s, p)]
    with cluster(args.zookeeper, args.bootstrap_servers) as c:
        run(c, args.quick, sizes, args.member_logs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
