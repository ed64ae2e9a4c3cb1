"""Switch pause of bridge connectors against a plain Kafka rebalance, with one pause definition for both.

    python benchmarks/switch_pause.py [--quick] [--zookeeper Z --bootstrap-servers B]

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
import logging
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import Cluster, add_cluster_args, cluster, quiet, ratio, save, unique
from benchmarks.member_process import MemberSpec, RemoteMember
from migrator.demo.group import create_topic, wait_for
from migrator.demo.steps import GroupDriver, Sizing
from migrator.demo.workload import QUIET_LOGGER, LiveLog, SequencedProducer
from migrator.kafka.admin import KafkaAdmin
from migrator.observe.pause import summary
from migrator.zk.client import connect
from migrator.zk.codecs import Mode

GOAL = 1.5  # median switch pause at most 1.5x the plain rebalance


@dataclass(frozen=True)
class Size:
    members: int
    streams: int
    partitions: int
    per_partition_rate: float = 100.0  # a record every 10 ms per partition


SIZES = [Size(4, 2, 16), Size(16, 4, 128)]
QUICK_SIZES = [Size(4, 2, 16)]


def _driver(c: Cluster, size: Size, tag: str, log_dir: str | None) -> tuple[GroupDriver, SequencedProducer, KafkaAdmin]:
    topic = unique(f"pause-{tag}")
    zk = connect(c.zookeeper)
    admin = KafkaAdmin(c.bootstrap_servers, {"logger": logging.getLogger(QUIET_LOGGER)})  # type: ignore[dict-item]
    create_topic(admin, zk, topic, size.partitions)
    sizing = Sizing(size.members, size.streams, size.partitions, size.per_partition_rate * size.partitions,
                    settle_s=0.3, step_timeout_s=90.0)  # fmt: skip
    log = LiveLog()

    def spawn(kind: str, name: str) -> RemoteMember:
        spec = MemberSpec(kind, name, c.zookeeper, c.bootstrap_servers, topic, topic, size.streams, log_dir)
        return RemoteMember(spec, log)

    driver = GroupDriver(c.zookeeper, c.bootstrap_servers, topic, topic, sizing, zk, admin, log,
                         echo=lambda line: print(line, flush=True), spawn=spawn)  # fmt: skip
    producer = SequencedProducer(
        c.bootstrap_servers, topic, size.partitions, sizing.rate, batch=max(1, size.partitions // 16)
    )
    return driver, producer, admin


def _run_group(c: Cluster, size: Size, rounds: int, plain: bool, log_dir: str | None) -> list[float | None]:
    """`rounds` measured transitions: mode switches of a bridge group, or joins of one more plain consumer."""
    d, producer, _ = _driver(c, size, "plain" if plain else "bridge", log_dir)
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
                step = d.step("baseline", f"plain consumer {name} joins", lambda name=name: _join(d, name))
                measured.append(step.pause_s)
                d.step("baseline", f"plain consumer {name} leaves", lambda name=name: d.stop(name))
            else:
                target = Mode.KAFKA if n % 2 == 0 else Mode.ZOOKEEPER
                measured.append(d.set_mode(target, "switch").pause_s)
        return measured
    finally:
        producer.stop()
        d.stop_all()
        d.zk.stop()
        d.zk.close()
        if d.errors:
            raise RuntimeError(f"member errors: {d.errors}")


def _join(d: GroupDriver, name: str) -> int:
    member = d.start("plain", name)
    assert isinstance(member, RemoteMember)
    return member.wait_subscribed()


def _stats(values: list[float | None]) -> dict[str, Any]:
    ok = [v for v in values if v is not None]
    s = summary(ok)
    return {"pauses_s": [round(v, 4) if v is not None else None for v in values], "unresolved": len(values) - len(ok),
            "median_s": round(s["median_s"], 4), "max_s": round(s["max_s"], 4)}  # fmt: skip


def measure(c: Cluster, size: Size, rounds: int = 10, log_dir: str | None = None) -> dict[str, Any]:
    print(f"== {size.members} bridges x {size.streams} streams on {size.partitions} partitions", flush=True)
    switch = _stats(_run_group(c, size, rounds, plain=False, log_dir=log_dir))
    print(f"== baseline: one plain consumer joins {size.members} plain consumers ({size.partitions} partitions)",
          flush=True)  # fmt: skip
    base = _stats(_run_group(c, size, rounds, plain=True, log_dir=None))
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
    quiet()
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
