"""How a group's transitions grow with its size: switch pause, rebalance pause and ZooKeeper packets per
switch of a group of bridges, beside a plain group's join, from 2 to 32 members and 16 to 1,024 partitions.

    python -m benchmarks.curves [--quick] [--sizes 2x16,4x64] [-z ZK -b BROKERS]

Per size (members x partitions, one stream per member, every member in its own process as in
`switch_pause`): a group of bridges is switched between zookeeper and kafka `rounds` times (`set-mode`,
preflight included) and the server's `zk_packets_received` delta is counted over each switch (every
client's packets in that window, pings included); then, in mode kafka, one more bridge joins and leaves
`rounds` times (the rebalance pause); the baseline is a group of plain confluent-kafka consumers of the
same size that one more plain consumer joins, `rounds` times. Pauses are `migrator.observe.pause`'s, as in
`switch_pause`. The producer writes at most `TOTAL_RATE` records/s in round robin, so at 1,024 partitions a
partition gets a record every ~0.3 s: that is the resolution of the pauses at that size.

The medians go to `results/curves.json` and three PNGs (`results/curves-switch-pause.png`,
`results/curves-rebalance-pause.png`, `results/curves-zk-packets.png`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.common import (
    RESULTS,
    Cluster,
    Size,
    add_cluster_args,
    close_group,
    cluster,
    group_driver,
    join,
    packets,
    quiet,
    save,
)
from benchmarks.switch_pause import run_group
from migrator.demo.group import wait_for
from migrator.protocol.codecs import Mode

TOTAL_RATE = 3200.0  # records/s over the whole topic at most: what 2 cores can produce beside 33 members
SIZES = [(2, 16), (4, 64), (8, 128), (16, 512), (32, 1024)]
QUICK_SIZES = [(2, 16), (4, 32)]


def size_of(members: int, partitions: int) -> Size:
    return Size(members, 1, partitions, per_partition_rate=min(100.0, TOTAL_RATE / partitions))


@dataclass(frozen=True)
class Point:
    """Medians at one size (seconds; packets per switch); None when no transition resolved."""

    members: int
    partitions: int
    switch_pause_s: float | None
    switch_pause_max_s: float | None
    zk_packets_per_switch: float | None
    rebalance_pause_s: float | None
    plain_join_s: float | None


def _median(values: list[float | None]) -> float | None:
    ok = [v for v in values if v is not None]
    return round(statistics.median(ok), 4) if ok else None


def bridge_group(c: Cluster, size: Size, rounds: int) -> tuple[list[float | None], list[int], list[float | None]]:
    """Switch pauses with their ZooKeeper packets, then bridges joining the group in mode kafka."""
    d, producer, _ = group_driver(c, size, "curve-bridge")
    producer.start()
    try:
        for i in range(size.members):
            d.start("bridge", f"m{i}")
        wait_for(d.converged, 90.0 + 5 * size.members, "the group to own every partition")
        switches: list[float | None] = []
        zk_packets: list[int] = []
        for n in range(rounds):
            before = packets(c)
            switches.append(d.set_mode(Mode.KAFKA if n % 2 == 0 else Mode.ZOOKEEPER, "switch").pause_s)
            zk_packets.append(packets(c) - before)
        if rounds % 2 == 0:  # the last switch went back to zookeeper: the rebalances are Kafka's
            d.set_mode(Mode.KAFKA, "switch")
        rebalances: list[float | None] = []
        for n in range(rounds):
            name = f"joiner{n}"
            step = d.step("rebalance", f"bridge {name} joins", lambda name=name: join(d, "bridge", name))
            rebalances.append(step.pause_s)
            d.step("rebalance", f"bridge {name} leaves", lambda name=name: d.stop(name))
        return switches, zk_packets, rebalances
    finally:
        producer.stop()
        close_group(d)


def measure(c: Cluster, members: int, partitions: int, rounds: int) -> Point:
    size = size_of(members, partitions)
    print(f"== {members} members on {partitions} partitions", flush=True)
    switches, zk_packets, rebalances = bridge_group(c, size, rounds)
    plain = run_group(c, size, rounds, plain=True, log_dir=None)
    ok = [v for v in switches if v is not None]
    return Point(members, partitions, _median(switches), round(max(ok), 4) if ok else None,
                 statistics.median(zk_packets) if zk_packets else None, _median(rebalances),
                 _median(plain))  # fmt: skip


def plot(points: list[Point], suffix: str = "") -> list[str]:
    """Three PNGs against group size; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [p.members for p in points]
    labels = [f"{p.members}\n({p.partitions} p)" for p in points]
    charts = (
        ("switch-pause", "pause (s)", [("bridges: switch, median", "switch_pause_s"),
                                       ("bridges: switch, max", "switch_pause_max_s"),
                                       ("plain group: join, median", "plain_join_s")]),
        ("rebalance-pause", "pause (s)", [("bridges in mode kafka: one joins, median", "rebalance_pause_s"),
                                          ("plain group: join, median", "plain_join_s")]),
        ("zk-packets", "ZooKeeper packets per switch", [("bridges: switch, median", "zk_packets_per_switch")]),
    )  # fmt: skip
    paths = []
    for name, ylabel, series in charts:
        fig, ax = plt.subplots(figsize=(7, 4))
        for label, field in series:
            ys = [getattr(p, field) for p in points]
            ax.plot(x, [float("nan") if y is None else y for y in ys], marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, labels)
        ax.set_xlabel("members (partitions)")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = RESULTS / f"curves-{name}{suffix}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(str(path))
    return paths


def run(c: Cluster, quick: bool = False, sizes: list[tuple[int, int]] | None = None) -> dict[str, Any]:
    quiet()
    rounds = 2 if quick else 4
    points = []
    for members, partitions in sizes or (QUICK_SIZES if quick else SIZES):
        started = time.monotonic()
        point = measure(c, members, partitions, rounds)
        points.append(point)
        print(f"{point} ({time.monotonic() - started:.0f}s)", flush=True)
    suffix = "-quick" if quick else ""
    pngs = plot(points, suffix)
    doc = {"rounds": rounds, "total_rate": TOTAL_RATE, "points": [asdict(p) for p in points], "plots": pngs}
    print(f"saved {save('curves' + suffix, doc)} and {', '.join(pngs)}", flush=True)
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cluster_args(parser)
    parser.add_argument("--sizes", help="MEMBERSxPARTITIONS,... e.g. 2x16,4x64 (default: 2x16 to 32x1024)")
    args = parser.parse_args(argv)
    sizes = None
    if args.sizes:
        sizes = [(int(m), int(p)) for m, p in (item.split("x") for item in args.sizes.split(","))]
    with cluster(args.zookeeper, args.bootstrap_servers) as c:
        run(c, args.quick, sizes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
