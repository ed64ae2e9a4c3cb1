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
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from migrator.demo.group import create_topic, wait_for
from migrator.demo.report import Outcome, document, judge_run, step_pauses, table, write_json
from migrator.demo.steps import FULL, QUICK, GroupDriver, Sizing
from migrator.demo.timeline import PLOT_HINT, available, draw, segments
from migrator.demo.workload import (
    QUIET_LOGGER,
    LiveLog,
    MemberKind,
    SequencedProducer,
    layout_properties,
    quiet_libraries,
)
from migrator.kafka.admin import KafkaAdmin
from migrator.observe import OwnerInterval, OwnersWatcher
from migrator.protocol.codecs import Mode
from migrator.protocol.dialect import Dialect
from migrator.zk.client import connect
from migrator.zk.session import close

Echo = Callable[[str], None]

LEGACY_NAMES = {Dialect.SCALA: "legacy", Dialect.PYKAFKA: "pykafka"}
"""How the demo names the group's ZooKeeper-coordinated members, by dialect."""
LEGACY_MEMBERS = {Dialect.SCALA: "legacy connectors", Dialect.PYKAFKA: "pykafka-dialect connectors"}


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
        quiet_libraries()


def run_demo(
    zookeeper: str | None,
    bootstrap: str | None,
    output: Path,
    quick: bool = False,
    echo: Echo = print,
    debug: bool = False,
    dialect: Dialect = Dialect.SCALA,
) -> DemoResult:
    """The whole demo; returns whether every safety property held, and where the report and PNG are.

    `dialect` is the legacy layout the group starts in: Scala connectors, or pykafka `BalancedConsumer`s
    (played by connectors with `zookeeper.layout=pykafka`, one stream each, as a pykafka member has)."""
    _quiet(debug)
    sizing = QUICK if quick else FULL
    if dialect is Dialect.PYKAFKA:
        sizing = replace(sizing, streams=1)
    output.mkdir(parents=True, exist_ok=True)
    with _cluster(zookeeper, bootstrap, echo) as (zk_connect, kafka):
        return _run(Demo(zk_connect, kafka, sizing, dialect, quick, output, echo))


@dataclass(frozen=True)
class Demo:
    """What one run is asked to do, and where it reports."""

    zookeeper: str
    bootstrap: str
    sizing: Sizing
    dialect: Dialect
    quick: bool
    output: Path
    echo: Echo


def _run(demo: Demo) -> DemoResult:
    run_id = uuid.uuid4().hex[:6]
    group, topic = f"demo-{run_id}", f"demo-{run_id}"
    zk = connect(demo.zookeeper)
    admin = KafkaAdmin(demo.bootstrap, {"logger": logging.getLogger(QUIET_LOGGER)})
    log = LiveLog()
    started = time.monotonic()
    try:
        sizing = demo.sizing
        create_topic(admin, zk, topic, sizing.partitions)
        demo.echo(
            f"group {group}: {sizing.members} {LEGACY_MEMBERS[demo.dialect]} x {sizing.streams} streams on topic "
            f"{topic} ({sizing.partitions} partitions), {sizing.rate:.0f} records/s"
        )
        driver = GroupDriver(demo.zookeeper, demo.bootstrap, group, topic, sizing, zk, admin, log, demo.echo)
        driver.layout = layout_properties(demo.dialect)
        produced, ownership = _migrate(demo, driver)
        ended_ns = time.time_ns()
        outcome = judge_run(produced, log.records(), ownership, driver.known, driver.errors)
        timeline = _timeline(demo, driver, ownership, ended_ns)
        settings = {"group": group, "topic": topic, "quick": demo.quick, "dialect": demo.dialect.value,
                    **asdict(sizing), "seconds": round(time.monotonic() - started, 1)}  # fmt: skip
        return _report(demo, driver, outcome, timeline, settings)
    finally:
        close(zk)


def _migrate(demo: Demo, driver: GroupDriver) -> tuple[set[tuple[str, int, int]], list[OwnerInterval]]:
    """Walk the plan under a live producer and the owners watcher, then drain; what was produced and owned."""
    sizing, log = demo.sizing, driver.log
    producer = SequencedProducer(demo.bootstrap, driver.topic, sizing.partitions, sizing.rate)
    with OwnersWatcher(demo.zookeeper, driver.group) as watcher:
        producer.start()
        try:
            _walk(driver, sizing.members, LEGACY_NAMES[demo.dialect])
            demo.echo("draining: every produced record processed, then every member leaves cleanly")
            produced = producer.stop()
            wait_for(
                lambda: len(log.resumed_since(0)) == sizing.partitions and produced <= {r.key for r in log.records()},
                60.0,
                "every record processed",
                interval_s=0.5,
            )
        finally:
            with contextlib.suppress(Exception):
                producer.stop()
            driver.stop_all()
        return produced, watcher.intervals()


def _timeline(demo: Demo, driver: GroupDriver, ownership: list[OwnerInterval], ended_ns: int) -> Path | None:
    """Draw timeline.png, or say how to get it (None) when matplotlib is not installed."""
    if not available():
        demo.echo(f"hint: {PLOT_HINT}")
        return None
    timeline = demo.output / "timeline.png"
    plain = {p.name: p.assigned for p in driver.plain_done}
    segs = segments(ownership, plain, driver.known)
    title = f"KIP-125 migration and rollback of group {driver.group}"
    if demo.dialect is Dialect.PYKAFKA:
        title += " (pykafka dialect)"
    draw(timeline, segs, driver.steps, driver.known, demo.sizing.partitions, driver.started_ns, ended_ns, title)
    return timeline


def _report(
    demo: Demo, driver: GroupDriver, outcome: Outcome, timeline: Path | None, settings: dict[str, object]
) -> DemoResult:
    """Write report.json, print the verdict table, and return the result."""
    step_pause = step_pauses(driver.steps, driver.log.records(), demo.sizing.partitions)
    report = demo.output / "report.json"
    doc = document(outcome, driver.steps, step_pause, settings, {"timeline": str(timeline) if timeline else None})
    write_json(report, doc)
    demo.echo(table(outcome, driver.steps, step_pause))
    demo.echo(f"report {report}, timeline {timeline or '-'} ({settings['seconds']:.0f}s)")
    return DemoResult(outcome.ok, report, timeline, outcome)


def _walk(d: GroupDriver, n: int, legacy: str) -> None:
    """KIP-125's migration plan, then its rollback; the legacy members are named `<legacy>-<i>`."""
    d.echo(f"step 0: the group runs as {n} {legacy} members coordinated through ZooKeeper")
    for i in range(1, n + 1):
        d.start(MemberKind.LEGACY, f"{legacy}-{i}")
    wait_for(d.converged, d.sizing.step_timeout_s, "the legacy group to own every partition")
    since = time.time_ns()
    wait_for(lambda: len(d.log.resumed_since(since)) >= d.sizing.partitions, d.sizing.step_timeout_s, "processing")
    time.sleep(d.sizing.settle_s)
    d.echo(f"1. roll the {legacy} members to bridges (coordination.migration.enabled=true), one at a time")
    for i in range(1, n + 1):
        d.replace("roll", f"{legacy}-{i}", MemberKind.BRIDGE, f"bridge-{i}")
    d.echo("2. switch the group to Kafka coordination")
    d.set_mode(Mode.KAFKA, "switch")
    d.echo("3. replace the bridges by plain Kafka consumers, one at a time")
    for i in range(1, n + 1):
        d.replace("migrate", f"bridge-{i}", MemberKind.PLAIN, f"plain-{i}")
    d.echo(f"4. roll back: plain consumers -> bridges, set-mode zookeeper, bridges -> {legacy} members")
    for i in range(1, n + 1):
        d.replace("rollback", f"plain-{i}", MemberKind.BRIDGE, f"bridge-{i}b")
    d.set_mode(Mode.ZOOKEEPER, "rollback")
    for i in range(1, n + 1):
        d.replace("rollback", f"bridge-{i}b", MemberKind.LEGACY, f"{legacy}-{i}b")
