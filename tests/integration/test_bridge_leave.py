"""A bridge leaving and joining a group in mode kafka, each bridge in its own process, as a deploy does it.

Issue 11 point 3 (the pause of a clean leave): a bridge that stops under Kafka authority leaves the Kafka
group before it deletes its owner nodes, so the group's rebalance overlaps the release instead of following
it; nothing is processed twice and no partition has two owners meanwhile. And the hold that every Kafka
rebalance puts the other bridges in for a moment is routine: it is not logged as a WARNING.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from migrator.demo.workload import bridge_props
from migrator.kafka.admin import KafkaAdmin
from migrator.observe import OwnersWatcher, judge, load_many
from migrator.zk.paths import GroupPaths
from tests.helpers.bridge import owners, set_mode, wait_converged
from tests.helpers.kafka import make_topic
from tests.helpers.wait import wait_until
from tests.helpers.workload import SequencedProducer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 8


class BridgeProcess:
    """`tests.helpers.member_proc` as a bridge; stderr (where an app without logging setup shows WARNINGs)
    is collected."""

    def __init__(self, cluster: object, group: str, topic: str, cid: str, log: Path) -> None:
        cmd = [sys.executable, "-m", "tests.helpers.member_proc", "--zookeeper", cluster.zookeeper,  # type: ignore[attr-defined]
               "--group", group, "--topic", topic, "--streams", "2", "--consumer-id", cid, "--log", str(log),
               "--process-ms", "1"]  # fmt: skip
        for key, value in bridge_props(cluster.bootstrap_servers).items():  # type: ignore[attr-defined]
            cmd += ["--property", f"{key}={value}"]
        self.cid = f"{group}_{cid}"
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.errors: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        assert line.startswith("ready"), f"bridge {cid} did not start: {line!r} {self.stderr}"

    def _read(self) -> None:
        for line in self.proc.stderr or ():
            self.errors.append(line.rstrip("\n"))

    @property
    def stderr(self) -> str:
        return "\n".join(self.errors)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(60)
        self._reader.join(5)
        return rc


@pytest.fixture
def bridges() -> Iterator[list[BridgeProcess]]:
    started: list[BridgeProcess] = []
    yield started
    for b in started:
        if b.proc.poll() is None:
            b.proc.kill()
            b.proc.wait(10)


def test_a_bridge_leaves_the_kafka_group_before_it_releases_and_nobody_warns_of_a_hold(
    cluster, unique_group, unique_topic, zk_client, tmp_path: Path, bridges: list[BridgeProcess]
) -> None:
    g, topic = unique_group, make_topic(cluster, unique_topic, PARTITIONS)
    logs = [tmp_path / f"{name}.jsonl" for name in ("a", "b", "c", "d")]
    admin = KafkaAdmin(cluster.bootstrap_servers)
    with OwnersWatcher(cluster.zookeeper, g, poll_interval_s=0.02) as watcher:
        producer = SequencedProducer(cluster, topic, rate=400).start()
        try:
            set_mode(zk_client, g, "kafka")
            for name, log in zip("abc", logs, strict=False):
                bridges.append(BridgeProcess(cluster, g, topic, name, log))
            a, b, c = bridges
            wait_converged(zk_client, g, topic, PARTITIONS, "kafka", {a.cid, b.cid, c.cid})
            wait_until(lambda: len({r.member for r in load_many(logs)}) == 3, 60, what="all three processing")

            # When the leaver's first owner node goes, is its embedded member still in the Kafka group?
            leaver_parts = {str(p) for p, th in owners(zk_client, g, topic).items() if th.startswith(f"{a.cid}-")}
            assert leaver_parts
            at_first_delete: list[frozenset[str]] = []

            def on_children(children: list[str]) -> bool:
                if not leaver_parts <= set(children) and not at_first_delete:
                    at_first_delete.append(admin.describe_group(g).client_ids)
                return not at_first_delete  # False ends the watch

            zk_client.ChildrenWatch(GroupPaths(g).owners_topic(topic), on_children)
            assert a.stop() == 0, a.stderr
            wait_until(lambda: bool(at_first_delete), 30, what="the leaver's owner nodes deleted")
            wait_converged(zk_client, g, topic, PARTITIONS, "kafka", {b.cid, c.cid})

            bridges.append(BridgeProcess(cluster, g, topic, "d", logs[3]))  # and a join, for the hold's logging
            wait_converged(zk_client, g, topic, PARTITIONS, "kafka", {b.cid, c.cid, bridges[-1].cid})
            wait_until(lambda: any(r.member.startswith(bridges[-1].cid) for r in load_many(logs)), 60,
                       what="the new bridge processing")  # fmt: skip
        finally:
            produced = producer.stop()
        wait_until(lambda: produced <= {r.key for r in load_many(logs)}, 90, what="every record processed")
        for bridge in bridges[1:]:
            assert bridge.stop() == 0, bridge.stderr
        ownership = watcher.intervals()
    verdict = judge(produced, load_many(logs), ownership)
    print(f"\nleave and join in mode kafka: {verdict.summary()}; at the leaver's first owner deletion the "
          f"Kafka group had {sorted(at_first_delete[0])}")  # fmt: skip
    assert verdict.ok, verdict.summary()
    for bridge in bridges:
        assert "holding nothing" not in bridge.stderr, f"{bridge.cid} warned of a routine hold:\n{bridge.stderr}"
        assert "-> zookeeper" not in bridge.stderr, f"{bridge.cid} fell back:\n{bridge.stderr}"
    assert a.cid not in at_first_delete[0], "the leaver deleted its owner nodes before leaving the Kafka group"
