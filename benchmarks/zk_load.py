"""ZooKeeper requests per authority switch and per legacy rebalance, against idle traffic.

    python -m benchmarks.zk_load [--quick] [--zookeeper Z --bootstrap-servers B]

Requests are the server's `zk_packets_received` delta (every client: connectors, pings, our `set-mode`
with its preflight reads) over a window from the trigger until the group has settled plus a 0.5 s tail.
Settling is judged from the members' own in-memory state, so the measurement adds no ZooKeeper reads. The
baseline is the same group idle over a window of the same length, measured right after: its pings and
periodic offset commits are what the group costs anyway. No records are produced (the load is coordination).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import Cluster, add_cluster_args, cluster, packets, ratio, save, unique
from migrator import ConsumerConnector
from migrator.demo.group import create_topic, wait_for
from migrator.demo.workload import CONNECTOR_PROPS, QUIET_LOGGER, bridge_props, quiet_libraries
from migrator.kafka.admin import KafkaAdmin
from migrator.ops import modes
from migrator.protocol.codecs import Mode
from migrator.zk.client import connect

TAIL_S = 0.5
MEMBERS, STREAMS, PARTITIONS = 4, 2, 16


def _settled(conns: list[ConsumerConnector], authority: str) -> bool:
    owned = [c.owned for c in conns]
    union = [tp for o in owned for tp in o]
    return (all(c.authority == authority for c in conns) and len(union) == PARTITIONS == len(set(union))
            and all(owned))  # fmt: skip


def _window(c: Cluster, trigger: Callable[[], None], settled: Callable[[], bool]) -> dict[str, Any]:
    p0, t0 = packets(c), time.monotonic()
    trigger()
    wait_for(settled, 60.0, "the group to settle", interval_s=0.005)
    settle_s = time.monotonic() - t0
    time.sleep(TAIL_S)
    window = time.monotonic() - t0
    used = packets(c) - p0
    p0 = packets(c)
    time.sleep(window)  # the idle baseline over the same length of time
    idle = packets(c) - p0
    return {"settle_s": round(settle_s, 3), "window_s": round(window, 3), "zk_packets": used, "idle_packets": idle}


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    used = statistics.median(r["zk_packets"] for r in rows)
    idle = statistics.median(r["idle_packets"] for r in rows)
    return {"rounds": rows, "median_zk_packets": used, "median_idle_packets": idle,
            "median_net_packets": used - idle, "ratio_to_idle": ratio(used, idle)}  # fmt: skip


def run(c: Cluster, quick: bool = False) -> dict[str, Any]:
    quiet_libraries()
    rounds = 2 if quick else 6
    topic = unique("zkload")
    zk = connect(c.zookeeper)
    admin = KafkaAdmin(c.bootstrap_servers, {"logger": logging.getLogger(QUIET_LOGGER)})  # type: ignore[dict-item]
    create_topic(admin, zk, topic, PARTITIONS)

    def make(group: str, cid: str, bridge: bool) -> ConsumerConnector:
        props = {"zookeeper.connect": c.zookeeper, "group.id": group, "consumer.id": cid, **CONNECTOR_PROPS}
        conn = ConsumerConnector({**props, **(bridge_props(c.bootstrap_servers) if bridge else {})})
        conn.create_message_streams({topic: STREAMS})
        return conn

    result: dict[str, Any] = {"members": MEMBERS, "streams": STREAMS, "partitions": PARTITIONS, "tail_s": TAIL_S}
    conns: list[ConsumerConnector] = []
    try:
        group = unique("zkload-bridges")
        conns = [make(group, f"b{i}", bridge=True) for i in range(MEMBERS)]
        wait_for(lambda: _settled(conns, "zookeeper"), 60.0, "bridges settled")
        switches = []
        for n in range(rounds):
            target = Mode.KAFKA if n % 2 == 0 else Mode.ZOOKEEPER

            def switch(target: Mode = target) -> None:
                deadline = time.monotonic() + 30
                while True:
                    try:
                        modes.set_mode(zk, group, target, admin=admin, reason="benchmark")
                        return
                    except modes.RefusedError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.1)

            switches.append({"to": target.value, **_window(c, switch, lambda t=target: _settled(conns, t.value))})
            print(f"  switch to {target.value}: {switches[-1]}", flush=True)
        for conn in conns:
            conn.shutdown()
        conns = []

        group = unique("zkload-legacy")
        conns = [make(group, f"l{i}", bridge=False) for i in range(MEMBERS)]
        wait_for(lambda: _settled(conns, "zookeeper"), 60.0, "legacy group settled")
        joins, leaves = [], []
        for n in range(rounds):
            joins.append(_window(c, lambda n=n: conns.append(make(group, f"j{n}", False)),
                                 lambda: _settled(conns, "zookeeper")))  # fmt: skip
            print(f"  legacy join: {joins[-1]}", flush=True)
            leaves.append(_window(c, lambda: conns.pop().shutdown(), lambda: _settled(conns, "zookeeper")))
            print(f"  legacy leave: {leaves[-1]}", flush=True)
    finally:
        for conn in conns:
            conn.shutdown()
        zk.stop()
        zk.close()
    result["switch"] = _summary(switches)
    result["legacy_join"] = _summary(joins)
    result["legacy_leave"] = _summary(leaves)
    for name in ("switch", "legacy_join", "legacy_leave"):
        r = result[name]
        print(f"{name}: {r['median_zk_packets']} ZooKeeper packets (idle over the same window: "
              f"{r['median_idle_packets']}, net {r['median_net_packets']}, {r['ratio_to_idle']}x idle)")  # fmt: skip
    print(f"saved {save('zk_load' + ('-quick' if quick else ''), result)}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cluster_args(parser)
    args = parser.parse_args(argv)
    with cluster(args.zookeeper, args.bootstrap_servers) as c:
        run(c, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
