"""`run_demo`: start (or use) a cluster, run a live group through KIP-125's whole plan and judge it.

Everything started here is stopped in `finally` blocks (members, watcher, producer, then the dev cluster),
so a failure or Ctrl-C leaves no JVM and no group member behind.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from migrator.demo.group import create_topic, wait_for
from migrator.demo.report import Outcome, document, judge_run, step_pauses, table, write_json
from migrator.demo.steps import FULL, QUICK, GroupDriver, Sizing
from migrator.demo.timeline import PLOT_HINT, available, draw, segments
from migrator.demo.workload import QUIET_LOGGER, LiveLog, SequencedProducer
from migrator.kafka.admin import KafkaAdmin
from migrator.observe import OwnersWatcher
from migrator.protocol.codecs import Mode
from migrator.zk.client import connect

Echo = Callable[[str], None]


@dataclass(frozen=True)
class DemoResult:
    ok: bool
    report: Path
    timeline: Path | None
    outcome: Outcome


@contextlib.contextmanager
def _cluster(zookeeper: str | None, bootstrap: str | None, echo: Echo) -> Iterator[tuple[str, str]]:
    if zookeeper and bootstrap:
        yield zookeeper, bootstrap
        return
    from migrator.devcluster import DevCluster

    started = time.monotonic()
    echo("starting a local ZooKeeper + Kafka (embedded dev cluster)...")
    cluster = DevCluster.start(brokers=1)
    try:
        echo(
            f"  cluster ready in {time.monotonic() - started:.1f}s: zookeeper {cluster.zookeeper}, "
            f"kafka {cluster.bootstrap_servers}"
        )
        yield cluster.zookeeper, cluster.bootstrap_servers
    finally:
        cluster.down()
        echo("dev cluster stopped")


def _quiet(debug: bool) -> None:
    if not debug:
        for name in ("kazoo", QUIET_LOGGER, "migrator"):
            logging.getLogger(name).setLevel(logging.CRITICAL)


def run_demo(
    zookeeper: str | None,
    bootstrap: str | None,
    output: Path,
    quick: bool = False,
    echo: Echo = print,
    debug: bool = False,
) -> DemoResult:
    """The whole demo; returns whether every safety property held, and where the report and PNG are."""
    _quiet(debug)
    sizing = QUICK if quick else FULL
    output.mkdir(parents=True, exist_ok=True)
    with _cluster(zookeeper, bootstrap, echo) as (zk_connect, kafka):
        return _run(zk_connect, kafka, sizing, output, echo)


def _run(zookeeper: str, bootstrap: str, sizing: Sizing, output: Path, echo: Echo) -> DemoResult:
    run_id = uuid.uuid4().hex[:6]
    group, topic = f"demo-{run_id}", f"demo-{run_id}"
    zk = connect(zookeeper)
    admin = KafkaAdmin(bootstrap, {"logger": logging.getLogger(QUIET_LOGGER)})
    log = LiveLog()
    started = time.monotonic()
    try:
        create_topic(admin, zk, topic, sizing.partitions)
        n, streams = sizing.members, sizing.streams
        echo(
            f"group {group}: {n} legacy connectors x {streams} streams on topic {topic} "
            f"({sizing.partitions} partitions), {sizing.rate:.0f} records/s"
        )
        driver = GroupDriver(zookeeper, bootstrap, group, topic, sizing, zk, admin, log, echo)
        producer = SequencedProducer(bootstrap, topic, sizing.partitions, sizing.rate)
        with OwnersWatcher(zookeeper, group, poll_interval_s=0.02) as watcher:
            producer.start()
            try:
                _walk(driver, n)
                echo("draining: every produced record processed, then every member leaves cleanly")
                produced = producer.stop()
                wait_for(
                    lambda: (
                        len(log.resumed_since(0)) == sizing.partitions and produced <= {r.key for r in log.records()}
                    ),
                    60.0,
                    "every record processed",
                    interval_s=0.5,
                )
            finally:
                with contextlib.suppress(Exception):
                    producer.stop()
                driver.stop_all()
        ended_ns = time.time_ns()
        records = log.records()
        outcome = judge_run(produced, records, watcher.intervals(), driver.known, driver.errors)
        step_pause = step_pauses(driver.steps, records, sizing.partitions)
        timeline: Path | None = None
        if available():
            timeline = output / "timeline.png"
            plain = {p.name: p.assigned for p in driver.plain_done}
            segs = segments(watcher.intervals(), plain, driver.known)
            draw(
                timeline,
                segs,
                driver.steps,
                driver.known,
                sizing.partitions,
                driver.started_ns,
                ended_ns,
                f"KIP-125 migration and rollback of group {group}",
            )
        else:
            echo(f"hint: {PLOT_HINT}")
        report = output / "report.json"
        settings = {
            "group": group,
            "topic": topic,
            "quick": sizing is QUICK,
            **asdict(sizing),
            "seconds": round(time.monotonic() - started, 1),
        }
        doc = document(outcome, driver.steps, step_pause, settings, {"timeline": str(timeline) if timeline else None})
        write_json(report, doc)
        echo(table(outcome, driver.steps, step_pause))
        echo(f"report {report}, timeline {timeline or '-'} ({time.monotonic() - started:.0f}s)")
        return DemoResult(outcome.ok, report, timeline, outcome)
    finally:
        zk.stop()
        zk.close()


def _walk(d: GroupDriver, n: int) -> None:
    """KIP-125's migration plan, then its rollback."""
    d.echo("step 0: the group runs as legacy ZooKeeper connectors")
    for i in range(1, n + 1):
        d.start("legacy", f"legacy-{i}")
    wait_for(d.converged, d.sizing.step_timeout_s, "the legacy group to own every partition")
    since = time.time_ns()
    wait_for(lambda: len(d.log.resumed_since(since)) >= d.sizing.partitions, d.sizing.step_timeout_s, "processing")
    time.sleep(d.sizing.settle_s)
    d.echo("1. roll the legacy connectors to bridges (coordination.migration.enabled=true), one at a time")
    for i in range(1, n + 1):
        d.replace("roll", f"legacy-{i}", "bridge", f"bridge-{i}")
    d.echo("2. switch the group to Kafka coordination")
    d.set_mode(Mode.KAFKA, "switch")
    d.echo("3. replace the bridges by plain Kafka consumers, one at a time")
    for i in range(1, n + 1):
        d.replace("migrate", f"bridge-{i}", "plain", f"plain-{i}")
    d.echo("4. roll back: plain consumers -> bridges, set-mode zookeeper, bridges -> legacy connectors")
    for i in range(1, n + 1):
        d.replace("rollback", f"plain-{i}", "bridge", f"bridge-{i}b")
    d.set_mode(Mode.ZOOKEEPER, "rollback")
    for i in range(1, n + 1):
        d.replace("rollback", f"bridge-{i}b", "legacy", f"legacy-{i}b")
