"""How long a legacy group takes to settle after a member joins (and leaves), and how many ZooKeeper
requests that rebalance costs.

    python -m benchmarks.legacy_rebalance [--members 6] [--partitions 12] [--rounds 3] [--out FILE]

Runs against MIGRATOR_TEST_ZOOKEEPER / MIGRATOR_TEST_BOOTSTRAP when set, else starts a dev cluster.
"Settled" means every member's own view (`conn.owned`) equals the range assignment for the new
membership, confirmed by one read of `/owners`. Requests are the server's `zk_packets_received` delta
over the rebalance (every client, pings included: ~1 per member per session_timeout/3), minus the reads
this script makes itself. Figures are printed and saved as JSON; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from migrator import ConsumerConnector
from migrator.assign.legacy import context_from_subscriptions, range_assign
from migrator.zk.group_reader import read_group

ROOT = Path(__file__).resolve().parents[1]

PROPS = {
    "auto.offset.reset": "smallest",
    "rebalance.backoff.ms": "300",
    "auto.commit.interval.ms": "1000",
    "zookeeper.session.timeout.ms": "4000",
}
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "legacy_rebalance.json"


def _expected(group: str, topic: str, cids: list[str], partitions: int) -> dict[Any, str]:
    subs = {f"{group}_{c}": {topic: 1} for c in cids}
    return range_assign(context_from_subscriptions(f"{group}_{cids[0]}", subs, {topic: range(partitions)}))


def _settle(conns: dict[str, ConsumerConnector], expected: dict[Any, str], timeout: float = 60.0) -> float:
    """Seconds until every member's own view matches `expected` (polled in memory, not in ZooKeeper)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if all(c.owned == {tp: th for tp, th in expected.items() if th.startswith(c.consumer_id + "-")}
               for c in conns.values()):  # fmt: skip
            return time.monotonic() - start
        time.sleep(0.005)
    raise TimeoutError(f"group did not settle in {timeout:.0f}s")


def measure(zookeeper: str, mntr: Callable[[], dict[str, str]], make_topic: Callable[[str, int], None],
            members: int = 6, partitions: int = 12, rounds: int = 3) -> dict[str, Any]:  # fmt: skip
    """Join and leave the `members`-th member `rounds` times on a settled group of `members - 1`."""
    group, topic = f"bench-{uuid.uuid4().hex[:8]}", f"bench-{uuid.uuid4().hex[:8]}"
    make_topic(topic, partitions)

    def connector(cid: str) -> ConsumerConnector:
        return ConsumerConnector({"zookeeper.connect": zookeeper, "group.id": group, "consumer.id": cid, **PROPS})

    def packets() -> int:
        return int(mntr()["zk_packets_received"])

    base = [f"m{i}" for i in range(members - 1)]
    conns: dict[str, ConsumerConnector] = {}
    joins: list[dict[str, float]] = []
    leaves: list[dict[str, float]] = []
    try:
        for cid in base:
            conns[cid] = connector(cid)
            conns[cid].create_message_streams({topic: 1})
        _settle(conns, _expected(group, topic, base, partitions))
        zk = KazooClient(hosts=zookeeper)
        zk.start(timeout=10)
        try:
            for r in range(rounds):
                joiner = f"j{r}"
                conn = connector(joiner)
                time.sleep(0.5)  # let the new session's connect traffic pass before counting
                p0 = packets()
                conns[joiner] = conn
                conn.create_message_streams({topic: 1})
                seconds = _settle(conns, _expected(group, topic, [*base, joiner], partitions))
                p1 = packets()
                assert read_group(zk, group).owners_of(topic) == _expected(group, topic, [*base, joiner], partitions)
                joins.append({"seconds": round(seconds, 4), "zk_packets": p1 - p0 - 1})  # -1: our mntr is not a packet
                time.sleep(0.5)
                p0 = packets()
                started = time.monotonic()
                conns.pop(joiner).shutdown()
                seconds = _settle(conns, _expected(group, topic, base, partitions))
                p1 = packets()
                total = time.monotonic() - started  # includes the leaver's own commit/release/deregister
                leaves.append({"seconds_after_shutdown": round(seconds, 4), "seconds": round(total, 4),
                               "zk_packets": p1 - p0})  # fmt: skip
                time.sleep(0.5)
        finally:
            zk.stop()
            zk.close()
    finally:
        for c in conns.values():
            c.shutdown()
    return {
        "members_after_join": members,
        "partitions": partitions,
        "rounds": rounds,
        "settings": PROPS,
        "join": joins,
        "leave": leaves,
        "join_seconds_median": round(statistics.median(j["seconds"] for j in joins), 4),
        "join_zk_packets_median": statistics.median(j["zk_packets"] for j in joins),
        "leave_seconds_median": round(statistics.median(j["seconds"] for j in leaves), 4),
        "leave_zk_packets_median": statistics.median(j["zk_packets"] for j in leaves),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="legacy rebalance cost")
    ap.add_argument("--members", type=int, default=6)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)

    from migrator.devcluster import DevCluster
    from tests.helpers.cluster import external_from_env
    from tests.helpers.kafka import make_topic

    cluster: Any = external_from_env()
    owned = cluster is None
    if owned:
        cluster = DevCluster.start(brokers=1)
    try:
        result = measure(cluster.zookeeper, cluster.mntr, lambda t, n: make_topic(cluster, t, n) and None,
                         args.members, args.partitions, args.rounds)  # fmt: skip
    finally:
        if owned:
            cluster.down()
    result["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
