"""Acceptance tests of the listener contract and commit control (docs/application.md), each member an app
of tests/apps/ in its own process using only the public API, judged by the observer."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from migrator.demo.workload import bridge_props
from migrator.observe import judge, load_many
from migrator.zk.group_reader import read_group
from migrator.zk.paths import GroupPaths
from tests.apps.run import App, apps_fixture, start  # noqa: F401 - the `apps` fixture
from tests.helpers.bridge import set_mode
from tests.helpers.kafka import make_topic, produce
from tests.helpers.wait import wait_until

pytestmark = pytest.mark.integration
NO_AUTO_COMMIT = ("--property", "auto.commit.enable=false", "--property", "auto.commit.interval.ms=300")


def member(apps: list[App], cluster, group: str, topic: str, cid: str, log: Path, *args: str) -> App:
    return start(apps, "listener_app.py", cluster.zookeeper, group, topic, cid, log, *args)


def fill(cluster, topic: str, partitions: int, per_partition: int) -> set[tuple[str, int, int]]:
    for p in range(partitions):
        produce(cluster, topic, (f"{p}-{o}" for o in range(per_partition)), partition=p)
    return {(topic, p, o) for p in range(partitions) for o in range(per_partition)}


def stop(app: App) -> float:
    app.signal(signal.SIGTERM)
    assert app.wait(60) == 0, app.stderr
    return float((app.line("stopped") or "stopped nan").split()[1])


def offsets(zk, group: str, topic: str) -> dict[int, int]:
    path = GroupPaths(group).offsets_topic(topic)
    if not zk.exists(path):
        return {}
    return {int(p): int(zk.get(f"{path}/{p}")[0]) for p in zk.get_children(path)}


def test_commit_in_before_releasing_partitions_hands_over_exactly_once_per_leaving_partition(
    cluster, zk_client, unique_group, unique_topic, tmp_path: Path, apps: list[App]
) -> None:
    """Points 6, 9 and 11: with `auto.commit.enable=false` only `commit_offsets()` commits, also from inside
    `before_releasing_partitions`, which is called once, for the partitions that leave the member only (a
    joins alone with 2 streams on 6 partitions; b's join moves partition 2 between a's threads and takes 4-5)."""
    topic = make_topic(cluster, unique_topic, partitions=6)
    produced = fill(cluster, topic, 6, 400)
    logs = {cid: tmp_path / f"{cid}.jsonl" for cid in ("a", "b")}
    a = member(apps, cluster, unique_group, topic, "a", logs["a"], "--streams", "2", "--commit-in-release",
               "--process-ms", "3", *NO_AUTO_COMMIT)  # fmt: skip
    wait_until(lambda: len(load_many([logs["a"]])) > 200, 30, what="a processing")
    b = member(apps, cluster, unique_group, topic, "b", logs["b"], "--commit-in-release", *NO_AUTO_COMMIT)
    wait_until(lambda: load_many([logs["b"]]), 20, what="b processing after joining")
    wait_until(lambda: produced <= {r.key for r in load_many(logs.values())}, 60, what="every record processed")
    took = stop(a), stop(b)
    released = [json.loads(line.split(" ", 1)[1]) for line in a.lines if line.startswith("released")]
    assert released[0] == {topic: [4, 5]}, released
    verdict = judge(produced, load_many(logs.values()))
    print(f"\nmirror pattern: released {released}; shutdown {took}; {verdict.summary()}")
    assert verdict.ok, verdict.summary()
    assert offsets(zk_client, unique_group, topic) == {p: 400 for p in range(6)}
    assert max(took) < 10.0, took


def test_without_auto_commit_neither_the_interval_nor_shutdown_commits(
    cluster, zk_client, unique_group, unique_topic, tmp_path: Path, apps: list[App]
) -> None:
    """Point 9."""
    topic = make_topic(cluster, unique_topic, partitions=2)
    produced = fill(cluster, topic, 2, 50)
    log = tmp_path / "a.jsonl"
    a = member(apps, cluster, unique_group, topic, "a", log, *NO_AUTO_COMMIT)
    wait_until(lambda: produced <= {r.key for r in load_many([log])}, 30, what="every record processed")
    time.sleep(1.5)  # several auto.commit.interval.ms
    assert offsets(zk_client, unique_group, topic) == {}
    stop(a)
    assert offsets(zk_client, unique_group, topic) == {}


def test_no_record_is_handed_out_before_before_starting_fetchers_returns(
    cluster, unique_group, unique_topic, tmp_path: Path, apps: list[App]
) -> None:
    """Point 5: b joins a, and b's listener sleeps 2 s in `before_starting_fetchers`: nothing of b's new
    partitions (all of them: it owned nothing before) is handed out meanwhile."""
    topic = make_topic(cluster, unique_topic, partitions=4)
    produced = fill(cluster, topic, 4, 100)
    logs = {cid: tmp_path / f"{cid}.jsonl" for cid in ("a", "b")}
    a = member(apps, cluster, unique_group, topic, "a", logs["a"], "--process-ms", "20")
    wait_until(lambda: load_many([logs["a"]]), 30, what="a processing")
    b = member(apps, cluster, unique_group, topic, "b", logs["b"], "--start-sleep", "2", "--process-ms", "20")
    wait_until(lambda: produced <= {r.key for r in load_many(logs.values())}, 60, what="every record processed")
    stop(a), stop(b)
    calls = [
        (int(s.split()[1]), int(e.split()[1]))
        for s, e in zip(
            [x for x in b.lines if x.startswith("starting")],
            [x for x in b.lines if x.startswith("started")],
            strict=True,
        )
    ]
    assert calls, b.lines
    for begun, returned in calls:
        early = [r for r in load_many([logs["b"]]) if begun <= r.start_ns < returned]
        assert not early, f"{len(early)} records handed out while before_starting_fetchers ran"


@pytest.mark.parametrize("where", ["release", "start", "release-bridges-kafka"])
def test_a_listener_that_raises_fails_its_member_and_stalls_nobody(
    cluster, zk_client, unique_group, unique_topic, tmp_path: Path, apps: list[App], where: str
) -> None:
    """Point 7: `release`: the running member a's `before_releasing_partitions` raises when b joins; `start`:
    the joining member b's `before_starting_fetchers` raises. Either way the failing member's streams raise
    ListenerError, it leaves the group, the other member processes every record, and shutdown is quick.
    `release-bridges-kafka`: as `release`, with bridges in mode kafka (a leaves the Kafka group too)."""
    topic = make_topic(cluster, unique_topic, partitions=4)
    produced = fill(cluster, topic, 4, 300)
    logs = {cid: tmp_path / f"{cid}.jsonl" for cid in ("a", "b")}
    bridge: tuple[str, ...] = ()
    if where.endswith("bridges-kafka"):
        set_mode(zk_client, unique_group, "kafka")
        bridge = tuple(
            x for k, v in bridge_props(cluster.bootstrap_servers).items() for x in ("--property", f"{k}={v}")
        )
    a_args = ("--raise-in", "release") if where.startswith("release") else ()
    a = member(apps, cluster, unique_group, topic, "a", logs["a"], "--process-ms", "5", *a_args, *bridge)
    wait_until(lambda: load_many([logs["a"]]), 30, what="a processing")
    b_args = ("--raise-in", "start") if where == "start" else ()
    b = member(apps, cluster, unique_group, topic, "b", logs["b"], "--process-ms", "5", *b_args, *bridge)
    failing, other = (a, b) if where.startswith("release") else (b, a)
    other_cid = f"{unique_group}_{'b' if where.startswith('release') else 'a'}"
    wait_until(lambda: failing.line("error"), 20, what="the failing member's stream raises")
    assert failing.line("error") == "error ListenerError"

    def other_owns_all() -> bool:
        owners = read_group(zk_client, unique_group).owners_of(topic)
        return len(owners) == 4 and {th.rsplit("-", 1)[0] for th in owners.values()} == {other_cid}

    wait_until(other_owns_all, 20, what="the other member owns every partition")
    wait_until(lambda: produced <= {r.key for r in load_many(logs.values())}, 60, what="every record processed")
    took = stop(failing), stop(other)
    assert "ListenerError" in failing.stderr and "the listener's own bug" in failing.stderr
    assert "failed to handle" not in failing.stderr and "rebalance failed" not in failing.stderr
    assert "poll loop failed" not in failing.stderr  # a bridge leaves the Kafka group by unsubscribing
    verdict = judge(produced, load_many(logs.values()))
    assert verdict.ok, verdict.summary()
    assert max(took) < 10.0, took


def test_a_member_subscribed_to_a_missing_topic_gets_the_topics_that_exist(
    cluster, unique_group, unique_topic, tmp_path: Path, apps: list[App]
) -> None:
    """Point 8: b also subscribes to a topic that does not exist; the group still rebalances (b takes its
    share of the existing topic), and once the topic is created b consumes it too."""
    topic = make_topic(cluster, unique_topic, partitions=4)
    missing = f"{unique_topic}-later"
    produced = fill(cluster, topic, 4, 100)
    logs = {cid: tmp_path / f"{cid}.jsonl" for cid in ("a", "b")}
    a = member(apps, cluster, unique_group, topic, "a", logs["a"], "--process-ms", "20")
    wait_until(lambda: load_many([logs["a"]]), 30, what="a processing")
    b = member(apps, cluster, unique_group, topic, "b", logs["b"], "--process-ms", "20", "--also", missing)
    wait_until(lambda: {r.topic for r in load_many([logs["b"]])} == {topic}, 20, what="b gets its share")
    wait_until(lambda: produced <= {r.key for r in load_many(logs.values())}, 60, what="every record processed")
    make_topic(cluster, missing, partitions=1)
    later = fill(cluster, missing, 1, 10)
    wait_until(lambda: later <= {r.key for r in load_many([logs["b"]])}, 30, what="b consumes the new topic")
    stop(a), stop(b)
    assert "not rebalancing" not in a.stderr + b.stderr
    assert judge(produced | later, load_many(logs.values())).ok
