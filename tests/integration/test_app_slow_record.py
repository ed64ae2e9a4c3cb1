"""A slow record (docs/application.md, "Slow records"): a release waits only for records of the partitions
it releases, with the bound and a WARNING, and the member joining meanwhile does not report a failed
rebalance. Apps of tests/apps/ in their own processes, bridges under Kafka authority (where a Kafka
rebalance makes a member release all its partitions at once)."""

from __future__ import annotations

import signal
from datetime import datetime
from pathlib import Path

import pytest

from migrator.demo.workload import bridge_props
from migrator.observe import load_many
from tests.apps.run import App, apps_fixture, start  # noqa: F401 - the `apps` fixture
from tests.helpers.bridge import set_mode
from tests.helpers.kafka import make_topic, produce
from tests.helpers.wait import wait_until

pytestmark = pytest.mark.integration
SLOW_S = 40  # longer than the 30 s bound of a release, as in the report this reproduces


def logged_at(stderr: str, text: str) -> float:
    """When (epoch seconds) the first log line containing `text` was written (the apps log local time)."""
    line = next(line for line in stderr.splitlines() if text in line)
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def test_a_slow_record_delays_only_its_own_partition_and_the_joiner_reports_no_failure(
    cluster, zk_client, unique_group, unique_topic, tmp_path: Path, apps: list[App]
) -> None:
    """`a` (2 streams) holds partitions 0-2 and spends SLOW_S on record 0@5; `b` joins and is assigned
    partition 2, which it processes before `a` gives up waiting for the slow record of partition 0."""
    topic = make_topic(cluster, unique_topic, partitions=3)
    for p in range(3):
        produce(cluster, topic, (f"{p}-{o}" for o in range(20)), partition=p)
    set_mode(zk_client, unique_group, "kafka")
    extra = [arg for k, v in bridge_props(cluster.bootstrap_servers).items() for arg in ("--property", f"{k}={v}")]
    logs = {cid: tmp_path / f"{cid}.jsonl" for cid in ("a", "b")}
    a = start(apps, "slow_record.py", cluster.zookeeper, unique_group, topic, "a", logs["a"], "--slow", "0:5",
              "--slow-s", SLOW_S, *extra)  # fmt: skip
    wait_until(lambda: a.line("slow") or a.proc.poll() is not None, 60, what="the slow record")
    b = start(apps, "slow_record.py", cluster.zookeeper, unique_group, topic, "b", logs["b"], "--streams", 1, *extra)
    for p in range(3):
        produce(cluster, topic, (f"{p}-later-{o}" for o in range(10)), partition=p)
    slow_done = lambda: [r for r in load_many([logs["a"]]) if (r.partition, r.offset) == (0, 5)]  # noqa: E731
    try:
        wait_until(slow_done, SLOW_S + 30, what="the slow record done")
        wait_until(lambda: any(r.partition == 2 for r in load_many([logs["b"]])), 90, what="b on partition 2")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- a:\n{a.stderr}\n--- b:\n{b.stderr}") from None
    handed_over = min(r.start_ns for r in load_many([logs["b"]]) if r.partition == 2) / 1e9
    # partition 0 was released when the slow record ended, or when the release gave up waiting for it
    released = slow_done()[0].end_ns / 1e9
    if "abandoning in-flight record" in a.stderr:
        released = min(released, logged_at(a.stderr, "abandoning in-flight record"))
    for app in (b, a):
        app.signal(signal.SIGTERM)
        assert app.wait(90) == 0, app.stderr
    print(f"\nslow record: partition 2 reached b {released - handed_over:.1f}s before partition 0 was released")
    assert handed_over < released, "partition 2 waited for the slow record of partition 0"
    assert "rebalance failed" not in b.stderr, b.stderr
    assert "release of" in a.stderr and "waits for" in a.stderr, a.stderr
