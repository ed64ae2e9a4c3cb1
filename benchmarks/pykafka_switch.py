"""The pause of a switch of bridges in the pykafka dialect, next to a pykafka group's own rebalance.

    python -m benchmarks.pykafka_switch [--rounds N] [-z ZK -b BROKERS]

Baseline: two real pykafka 2.8.0 `BalancedConsumer`s (each its own process, `tests/helpers/pykafka_peer.py`)
and a third one joining, `--rounds` times (it leaves between rounds); the trigger of a join is the ctime
of its `ids` node (when pykafka registered it, on ZooKeeper's clock, so its interpreter's start is not
counted). Measured: two bridges (`zookeeper.layout=pykafka`, each its own process) switched with
`migrator set-mode kafka` and back, `--rounds` times each way; the trigger is the mode node's mtime. Each
group has its own 8-partition topic under a producer writing every partition every 10 ms; a pause is
`migrator.observe.pause` (the latest first record of each partition's new owner after the trigger).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from benchmarks.common import Cluster, add_cluster_args, cluster, ratio, save, unique
from migrator.demo.group import create_topic
from migrator.demo.workload import SequencedProducer, bridge_props, quiet_libraries
from migrator.kafka.admin import KafkaAdmin
from migrator.observe import load_many
from migrator.observe.pause import pause_after, summary
from migrator.zk.client import connect
from migrator.zk.paths import GroupPaths
from tests.helpers import cli
from tests.helpers.member_proc import MemberProcess
from tests.helpers.pykafka_peer import PykafkaMember

PARTITIONS = 8
SETTLE_S = 5.0
"""After a transition, before the next trigger: the group settles and every partition is processed again."""


def _pause(logs: list[Path], trigger_ns: int) -> float | None:
    time.sleep(SETTLE_S)
    found = pause_after(trigger_ns, load_many([p for p in logs if p.exists()]), trigger_ns + int(SETTLE_S * 1e9))
    return round(found.seconds, 3) if found is not None and found.partitions == PARTITIONS else None


def _topic(c: Cluster, admin: KafkaAdmin, zk: Any, tag: str) -> tuple[str, SequencedProducer]:
    topic = unique(tag)
    create_topic(admin, zk, topic, PARTITIONS)
    return topic, SequencedProducer(c.bootstrap_servers, topic, PARTITIONS, 100.0 * PARTITIONS).start()


def pykafka_joins(c: Cluster, admin: KafkaAdmin, zk: Any, tmp: Path, rounds: int) -> list[float | None]:
    topic, producer = _topic(c, admin, zk, "pk-join")
    logs = [tmp / f"join-{i}.jsonl" for i in range(rounds + 2)]
    members = [PykafkaMember(c.zookeeper, c.bootstrap_servers, topic, topic, logs[i]) for i in range(2)]
    pauses: list[float | None] = []
    try:
        time.sleep(SETTLE_S)
        for r in range(rounds):
            joining = PykafkaMember(c.zookeeper, c.bootstrap_servers, topic, topic, logs[2 + r])
            trigger_ns = zk.get(GroupPaths(topic).member(joining.consumer_id))[1].ctime * 1_000_000
            pauses.append(_pause(logs, trigger_ns))
            joining.stop()
            time.sleep(SETTLE_S)
    finally:
        for m in members:
            m.stop()
        producer.stop()
    return pauses


def switches(c: Cluster, admin: KafkaAdmin, zk: Any, tmp: Path, rounds: int) -> dict[str, list[float | None]]:
    topic, producer = _topic(c, admin, zk, "pk-switch")
    props = {"zookeeper.layout": "pykafka", **bridge_props(c.bootstrap_servers)}
    logs = [tmp / f"bridge-{i}.jsonl" for i in range(2)]
    bridges = [MemberProcess(c.zookeeper, topic, topic, f"b{i}", logs[i], props=props) for i in range(2)]
    pauses: dict[str, list[float | None]] = {"kafka": [], "zookeeper": []}
    try:
        time.sleep(SETTLE_S)
        for _ in range(rounds):
            for mode in ("kafka", "zookeeper"):
                done = cli.run("set-mode", mode, "-g", topic, "-z", c.zookeeper, "-b", c.bootstrap_servers,
                               "--wait", "--timeout", "60")  # fmt: skip
                if done.code != 0:
                    raise RuntimeError(f"set-mode {mode}: {done.stderr.strip()}")
                trigger_ns = zk.get(GroupPaths(topic).mode)[1].mtime * 1_000_000
                pauses[mode].append(_pause(logs, trigger_ns))
    finally:
        for b in bridges:
            b.stop()
        producer.stop()
    return pauses


def run(c: Cluster, rounds: int) -> dict[str, Any]:
    zk = connect(c.zookeeper)
    admin = KafkaAdmin(c.bootstrap_servers)
    try:
        with TemporaryDirectory() as tmp:
            joins = pykafka_joins(c, admin, zk, Path(tmp), rounds)
            switched = switches(c, admin, zk, Path(tmp), rounds)
    finally:
        admin.close()
        zk.stop()
        zk.close()
    base = summary([p for p in joins if p is not None])
    result: dict[str, Any] = {"pykafka_join": {"pauses_s": joins, **base}}
    for mode, values in switched.items():
        stats = summary([p for p in values if p is not None])
        result[f"switch_to_{mode}"] = {"pauses_s": values, **stats,
                                       "median_ratio": ratio(stats.get("median_s"), base.get("median_s"))}  # fmt: skip
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_cluster_args(parser)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    quiet_libraries()
    with cluster(args.zookeeper, args.bootstrap_servers) as c:
        result = run(c, 2 if args.quick else args.rounds)
    path = save("pykafka_switch-quick" if args.quick else "pykafka_switch", {"partitions": PARTITIONS, **result})
    for name, figures in result.items():
        print(name, {k: v for k, v in figures.items() if k != "pauses_s"}, figures["pauses_s"])
    print(f"saved {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
