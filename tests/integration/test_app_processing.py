"""Acceptance tests of the processing model (docs/application.md), each with an app of tests/apps/ in its
own process using only the public API, judged by the observer where records matter."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from migrator.demo.workload import bridge_props
from migrator.observe import judge, load_many
from tests.apps.run import App, apps_fixture, start  # noqa: F401 - the `apps` fixture
from tests.helpers.bridge import set_mode, wait_converged
from tests.helpers.kafka import make_topic, produce
from tests.helpers.wait import wait_until

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("coordination", ["zookeeper", "bridges-kafka"])
def test_leaving_the_loop_then_commit_and_shutdown_duplicates_nothing_and_is_quick(
    cluster, zk_client, unique_group, unique_topic, tmp_path: Path, apps: list[App], coordination: str
) -> None:
    """Point 3: threads `break` out of `for m in stream` on SIGTERM, the main thread commits and shuts down:
    no record is processed twice, and the shutdown does not wait for the records the threads had in hand.
    For legacy connectors, and for bridges in mode kafka. (The pause a leave causes under load is measured
    by benchmarks/, beside a plain consumer's leave in the same run.)"""
    topic = make_topic(cluster, unique_topic, partitions=4)
    produced = {(topic, p, o) for p in range(4) for o in range(1500)}
    for p in range(4):
        produce(cluster, topic, (f"{p}-{o}" for o in range(1500)), partition=p)
    extra: list[str] = []
    if coordination == "bridges-kafka":
        set_mode(zk_client, unique_group, "kafka")
        for key, value in bridge_props(cluster.bootstrap_servers).items():
            extra += ["--property", f"{key}={value}"]
    logs = {cid: tmp_path / f"{cid}.jsonl" for cid in ("a", "b")}
    leaving = start(apps, "leave_loop.py", cluster.zookeeper, unique_group, topic, "a", logs["a"], *extra)
    staying = start(apps, "leave_loop.py", cluster.zookeeper, unique_group, topic, "b", logs["b"], *extra)
    if coordination == "bridges-kafka":
        wait_converged(zk_client, unique_group, topic, 4, "kafka", {f"{unique_group}_a", f"{unique_group}_b"})
    wait_until(lambda: len({r.member for r in load_many(logs.values())}) == 2, 60, what="both members processing")
    time.sleep(1.0)
    leaving.signal(signal.SIGTERM)
    assert leaving.wait(60) == 0, leaving.stderr
    took = float((leaving.line("stopped") or "stopped nan").split()[1])
    wait_until(lambda: produced <= {r.key for r in load_many(logs.values())}, 90, what="every record processed")
    staying.signal(signal.SIGTERM)
    assert staying.wait(60) == 0, staying.stderr
    verdict = judge(produced, load_many(logs.values()))
    print(f"\nleave after break ({coordination}): commit+shutdown {took:.2f}s; {verdict.summary()}")
    assert verdict.ok, verdict.summary()
    assert took < 5.0, f"commit_offsets() + shutdown() took {took:.1f}s: it waited for records in hand"
    assert "in-flight" not in leaving.stderr and "waits" not in leaving.stderr, leaving.stderr


def test_the_same_iterator_continues_after_a_consumer_timeout(
    cluster, unique_group, unique_topic, apps: list[App]
) -> None:
    """Point 2: `next(it)` raised ConsumerTimeout on an empty topic; the same `it` then yields the records."""
    topic = make_topic(cluster, unique_topic, partitions=1)
    app = start(apps, "timeout_iterator.py", cluster.zookeeper, unique_group, topic, 5)
    wait_until(lambda: app.lines.count("timeout") >= 2 or app.proc.poll() is not None, 30, what="two timeouts")
    produce(cluster, topic, [f"v{i}" for i in range(5)])
    assert app.wait(60) == 0, f"{app.lines[-3:]} {app.stderr}"
    assert [line for line in app.lines if line.startswith("record")] == [f"record {i}" for i in range(5)]


@pytest.mark.parametrize("records", [0, 3000], ids=["idle", "busy"])
def test_shutdown_from_a_signal_handler_ends_the_loop_of_the_interrupted_thread(
    cluster, zk_client, unique_group, unique_topic, tmp_path: Path, apps: list[App], records: int
) -> None:
    """Point 4: SIGTERM's handler calls `shutdown()` while the main thread is inside `for m in stream` (idle:
    polling Kafka under the fetcher's lock); the loop ends, the member leaves, and a rerun continues."""
    topic = make_topic(cluster, unique_topic, partitions=2)
    produced = {(topic, p, o) for p in range(2) for o in range(records // 2)}
    for p in range(2):
        produce(cluster, topic, (f"{p}-{o}" for o in range(records // 2)), partition=p)
    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    app = start(apps, "signal_shutdown.py", cluster.zookeeper, unique_group, topic, first)
    if records:
        wait_until(lambda: len(load_many([first])) > 100, 30, what="the app processing")
    else:
        time.sleep(2.0)
    app.signal(signal.SIGTERM)
    assert app.wait(20) == 0, app.stderr
    assert app.line("stopped")
    assert zk_client.get_children(f"/consumers/{unique_group}/ids") == []
    rerun = start(apps, "signal_shutdown.py", cluster.zookeeper, unique_group, topic, second)
    wait_until(lambda: produced <= {r.key for r in load_many([first, second])}, 60, what="every record processed")
    rerun.signal(signal.SIGTERM)
    assert rerun.wait(20) == 0, rerun.stderr
    verdict = judge(produced, load_many([first, second]))
    assert verdict.ok, verdict.summary()


def test_a_record_whose_processing_raised_in_a_with_block_is_processed_again(
    cluster, unique_group, unique_topic, tmp_path: Path, apps: list[App]
) -> None:
    """Point 10, `with ConsumerConnector(...)`: the exception ends the block; a rerun starts at that record."""
    topic = make_topic(cluster, unique_topic, partitions=1)
    produced = {(topic, 0, o) for o in range(50)}
    produce(cluster, topic, (f"v{o}" for o in range(50)))
    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    failing = start(
        apps, "fail_app.py", cluster.zookeeper, unique_group, topic, "a", first, "with", "--fail-at", "0:10"
    )
    assert failing.wait(30) != 0
    assert "cannot process 0:10" in failing.stderr
    rerun = start(apps, "fail_app.py", cluster.zookeeper, unique_group, topic, "a", second, "thread")
    wait_until(lambda: produced <= {r.key for r in load_many([first, second])}, 30, what="every record processed")
    rerun.signal(signal.SIGTERM)
    assert rerun.wait(30) == 0, rerun.stderr
    assert min(r.offset for r in load_many([second])) == 10
    assert judge(produced, load_many([first, second])).ok


def test_a_record_whose_processing_raised_in_a_thread_goes_to_the_next_owner_without_a_stall(
    cluster, unique_group, unique_topic, tmp_path: Path, apps: list[App]
) -> None:
    """Point 10, a worker thread: the exception ends the thread; a member joining takes that partition over
    at once (no 30 s wait for the dead thread's record) and processes the record again; shutdown is quick."""
    topic = make_topic(cluster, unique_topic, partitions=2)
    produced = {(topic, p, o) for p in range(2) for o in range(50)}
    for p in range(2):
        produce(cluster, topic, (f"v{o}" for o in range(50)), partition=p)
    logs = {cid: tmp_path / f"{cid}.jsonl" for cid in ("a", "0b")}
    failing = start(apps, "fail_app.py", cluster.zookeeper, unique_group, topic, "a", logs["a"], "thread",
                    "--fail-at", "0:10")  # fmt: skip
    wait_until(lambda: "cannot process 0:10" in failing.stderr, 30, what="the thread fails")
    joined = time.monotonic()
    # `0b-0` sorts before `a-0`: range gives it partition 0, the one whose thread failed
    taker = start(apps, "fail_app.py", cluster.zookeeper, unique_group, topic, "0b", logs["0b"], "thread")
    wait_until(lambda: (topic, 0, 49) in {r.key for r in load_many([logs["0b"]])}, 30, what="0b takes partition 0")
    took_over = time.monotonic() - joined
    failing.signal(signal.SIGTERM)
    assert failing.wait(30) == 0, failing.stderr
    stopped = float((failing.line("stopped") or "stopped nan").split()[1])
    taker.signal(signal.SIGTERM)
    assert taker.wait(30) == 0, taker.stderr
    retried = [r for r in load_many([logs["0b"]]) if r.partition == 0]
    print(f"\nfailed thread: partition taken over in {took_over:.1f}s, shutdown {stopped:.2f}s")
    assert min(r.offset for r in retried) == 10
    assert took_over < 15.0 and stopped < 5.0, (took_over, stopped)
    verdict = judge(produced - {(topic, 1, o) for o in range(50)}, load_many(logs.values()))
    assert not verdict.lost and not verdict.unexpected_duplicates, verdict.summary()
