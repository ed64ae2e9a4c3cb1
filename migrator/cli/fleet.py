"""`migrator fleet-scan`: classify every group of several ZooKeeper ensembles on Spark, optionally switch
the READY ones to kafka in waves (`--apply`), or undo such a run (`--rollback PLANFILE`).

`--zookeeper` takes one ensemble per value or several separated by `;` (a `,` separates the hosts of one
ensemble). See docs/fleet.md.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import re
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import click
from kazoo.client import KazooClient

from migrator.cli.common import KAFKA_PROPERTY, check_kafka_properties, check_zk_auth
from migrator.errors import EXIT_FAILED, EXIT_OK, EnvironmentProblem, MigratorError, RefusedError, UsageError
from migrator.fleet.scan import ScanSettings, group_filter, list_groups, now_ms, pair_bootstrap, split_ensembles

log = logging.getLogger(__name__)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(text: str, option: str) -> int:
    """`30m`, `90s`, `2h`, `1d`, `500ms`; a bare number is seconds."""
    match = _DURATION.match(text or "")
    if not match:
        raise UsageError(f"{option}: {text!r} is not a duration like 30s, 30m, 2h")
    return int(float(match.group(1)) * _UNITS_MS[match.group(2) or "s"])


SPARK_EXTRA = ("pyspark", "tqdm")


def _require_spark() -> None:
    """The scan runs on Spark, an optional extra: say which one to install instead of a traceback."""
    missing = [name for name in SPARK_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise EnvironmentProblem(
            f"fleet-scan needs the 'spark' extra ({', '.join(missing)} missing): pip install 'migrator[spark]'"
        )


def _fill_bootstrap(
    bootstrap: dict[str, str | None], zks: dict[str, KazooClient], needed: list[str], *, required: bool
) -> dict[str, str | None]:
    """Ensembles without -b get the brokers registered under their /brokers/ids. A run that switches
    modes (`required`: --apply, --rollback) refuses, before writing anything, when an ensemble's Kafka
    cannot be found: its preflight could not see plain Kafka consumers (set-mode refuses the same way)."""
    from migrator.zk.brokers import published_bootstrap, registered_brokers

    filled = dict(bootstrap)
    for ensemble in needed:
        if not filled.get(ensemble):
            zk = zks[ensemble]
            found = registered_brokers(zk)
            for group in [] if found else list_groups(zk):
                if found := published_bootstrap(zk, group):  # a KRaft cluster: what its bridges joined
                    break
            filled[ensemble] = found or None
    blind = [e for e in needed if not filled.get(e)]
    if required and blind:
        raise RefusedError(
            f"no --bootstrap-servers, no broker registered under /brokers/ids and no bridge that published its "
            f"brokers for {', '.join(blind)}: the Kafka group of its groups cannot be checked; give "
            "--bootstrap-servers. Nothing was written"
        )
    return filled


@contextlib.contextmanager
def _clients(ensembles: list[str], auth: str | None, timeout_s: float) -> Iterator[dict[str, KazooClient]]:
    from migrator.zk.client import connect

    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    zks: dict[str, KazooClient] = {}
    try:
        for e in ensembles:
            zks[e] = connect(e, auth=auth, timeout_s=timeout_s)
        yield zks
    finally:
        for zk in zks.values():
            zk.stop()
            zk.close()


def _max_sizes(bootstrap: dict[str, str | None], props: dict[str, str], timeout_s: float) -> dict[str, int | None]:
    from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable

    sizes: dict[str, int | None] = {}
    cache: dict[str, int | None] = {}
    for ensemble, servers in bootstrap.items():
        if servers and servers not in cache:
            try:
                cache[servers] = KafkaAdmin(servers, props, timeout_s).group_max_size()
            except KafkaUnavailable as exc:
                click.echo(f"warning: group.max.size of {servers} unknown: {exc}", err=True)
                cache[servers] = None
        sizes[ensemble] = cache.get(servers) if servers else None
    return sizes


_CAUSE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Unavailable|Problem)): (.+)$")


def _root_cause(exc: BaseException) -> str:
    """The last `SomeError: message` line of a (Py4J-wrapped) executor traceback."""
    found = [m for m in (_CAUSE.match(line.strip()) for line in str(exc).splitlines()) if m]
    if not found:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    name, message = found[-1].groups()
    return f"{name.rsplit('.', 1)[-1]}: {message}"


def _master(option: str | None) -> str | None:
    """None under spark-submit (its --master rules), else the option or local[*]."""
    if option:
        return option
    return None if os.environ.get("PYSPARK_GATEWAY_PORT") else "local[*]"


@click.command("fleet-scan")
@click.option(
    "--zookeeper",
    "-z",
    "zookeepers",
    multiple=True,
    required=True,
    metavar="Z[;Z2...]",
    help="ZooKeeper ensembles: `;` between ensembles, `,` between hosts of one; repeatable.",
)
@click.option(
    "--zk-auth",
    envvar="MIGRATOR_ZK_AUTH",
    callback=check_zk_auth,
    metavar="digest:USER:PASSWORD",
    help="ZooKeeper identity.",
)
@click.option(
    "--bootstrap-servers",
    "-b",
    metavar="B[;B2...]",
    help="Kafka brokers: one cluster for all ensembles, or one per ensemble separated by `;`; default: each "
    "ensemble's brokers under /brokers/ids (--apply and --rollback refuse when there are none).",
)
@click.option(
    "--kafka-property",
    multiple=True,
    type=KAFKA_PROPERTY,
    metavar="KEY=VALUE",
    help="Kafka client property; repeatable.",
)
@click.option("--include", metavar="REGEX", help="Only groups whose name matches (search).")
@click.option("--exclude", metavar="REGEX", help="Skip groups whose name matches (search).")
@click.option(
    "--stable-for",
    default="30m",
    show_default=True,
    metavar="DURATION",
    help="READY needs no membership/mode change for this long.",
)
@click.option("--output", "output_dir", type=click.Path(file_okay=False, path_type=Path), help="Write rows here.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv", "parquet"]),
    default="table",
    show_default=True,
    help="Format of the rows file under --output.",
)
@click.option(
    "--spark-master", metavar="MASTER", help="Spark master; default local[*] (spark-submit's own when run under it)."
)
@click.option("--partitions", type=click.IntRange(min=1), help="Spark partitions (default: cores, ≤1000 groups each).")
@click.option("--apply", "do_apply", is_flag=True, help="Switch READY groups to kafka in waves (default: dry run).")
@click.option("--wave-size", type=click.IntRange(min=1), default=10, show_default=True, help="READY groups per wave.")
@click.option(
    "--wave-interval", default="60s", show_default=True, metavar="DURATION", help="How long each wave is watched."
)
@click.option(
    "--max-lag-growth",
    type=click.IntRange(min=0),
    default=10_000,
    show_default=True,
    help="Roll a wave back if a group's lag grows by more than this many records.",
)
@click.option("--plan-file", type=click.Path(dir_okay=False, path_type=Path), help="Where the run's plan goes.")
@click.option(
    "--rollback",
    "rollback_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Undo an applied run: restore the modes its plan file records.",
)
@click.option(
    "--connect-timeout",
    type=click.FloatRange(min=0.1),
    default=15.0,
    show_default=True,
    metavar="SECONDS",
    help="Give up on an unreachable ZooKeeper or Kafka after this long.",
)
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def fleet_scan(
    zookeepers: tuple[str, ...],
    zk_auth: str | None,
    bootstrap_servers: str | None,
    kafka_property: tuple[tuple[str, str], ...],
    include: str | None,
    exclude: str | None,
    stable_for: str,
    output_dir: Path | None,
    fmt: str,
    spark_master: str | None,
    partitions: int | None,
    do_apply: bool,
    wave_size: int,
    wave_interval: str,
    max_lag_growth: int,
    plan_file: Path | None,
    rollback_file: Path | None,
    connect_timeout: float,
    no_progress: bool,
) -> int:
    """Scan every consumer group, classify it, and (with --apply) switch the READY ones to kafka.

    \b
    Statuses: LEGACY, MIGRATING, READY, KAFKA, MIXED_KAFKA_CONSUMERS, BLOCKED, ORPHANED, INCONSISTENT.
    Exit codes: 0 done, 1 a wave was rolled back or a restore failed, 2 refused (another scanner holds
    the lock, bad arguments).
    """
    from migrator.fleet import report
    from migrator.fleet.apply import ApplyOptions, FleetIO, apply_waves, plan_waves, rollback_plan
    from migrator.fleet.lock import FleetLock
    from migrator.fleet.plan import Outcome, Plan
    from migrator.ops.modes import who_am_i

    ensembles = split_ensembles(zookeepers)
    bootstrap = pair_bootstrap(ensembles, bootstrap_servers)
    props = dict(kafka_property)
    check_kafka_properties(props)
    keep = group_filter(include, exclude)
    stable_for_ms = parse_duration_ms(stable_for, "--stable-for")
    interval_s = parse_duration_ms(wave_interval, "--wave-interval") / 1000
    run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:6]
    if rollback_file is not None and do_apply:
        raise UsageError("--rollback and --apply exclude each other")
    if rollback_file is None:
        _require_spark()

    if rollback_file is not None:
        plan = Plan.load(rollback_file)
        needed = sorted({e.ensemble for e in plan.groups} | {ensembles[0]}, key=lambda e: e != ensembles[0])
        with _clients(needed, zk_auth, connect_timeout) as zks:
            given = {e: bootstrap.get(e) or next(iter(bootstrap.values())) for e in needed}
            plan_boot = _fill_bootstrap(given, zks, needed, required=True)
            with FleetLock(zks[ensembles[0]], run_id) as rollback_lock:
                who = f"{who_am_i(zk_auth)} fleet-scan {run_id} ({rollback_lock.identity})"
                io = FleetIO(zks, plan_boot, {}, who, props)
                restored, failed = rollback_plan(io, plan, rollback_file, run_id)
        click.echo(f"rollback of run {plan.run_id}: {restored} groups restored, {failed} failed ({rollback_file})")
        return EXIT_FAILED if failed else EXIT_OK

    with contextlib.ExitStack() as stack:
        zks = stack.enter_context(_clients(ensembles, zk_auth, connect_timeout))
        if do_apply:  # a dry-run scan without -b keeps saying `kafka-unchecked`: it switches nothing
            bootstrap = _fill_bootstrap(bootstrap, zks, ensembles, required=True)
        lock = stack.enter_context(FleetLock(zks[ensembles[0]], run_id)) if do_apply else None
        items = [(e, g) for e in ensembles for g in list_groups(zks[e], keep)]
        click.echo(f"{len(items)} groups in {len(ensembles)} ensemble(s)", err=True)
        max_sizes = _max_sizes(bootstrap, props, connect_timeout)
        settings = ScanSettings(
            bootstrap=bootstrap,
            stable_for_ms=stable_for_ms,
            now_ms=now_ms(),
            group_max_size=max_sizes,
            zk_auth=zk_auth,
            kafka_properties=props,
            zk_timeout_s=connect_timeout,
            kafka_timeout_s=connect_timeout,
        )
        rows, elapsed = _scan(items, settings, spark_master, partitions, no_progress, output_dir, fmt)
        if output_dir is not None and fmt != "parquet":
            path = report.write_rows(rows, output_dir, fmt)
            click.echo(f"rows written to {path}", err=True)
        click.echo(report.summary(rows, elapsed))

        holder = lock.identity if lock is not None else f"dry run {run_id}"
        plan = Plan(run_id=run_id, holder=holder, dry_run=not do_apply, started_at_ms=settings.now_ms)
        plan.options = {
            "ensembles": ensembles,
            "bootstrap_servers": bootstrap_servers,
            "include": include,
            "exclude": exclude,
            "stable_for_ms": stable_for_ms,
            "wave_size": wave_size,
            "wave_interval_s": interval_s,
            "max_lag_growth": max_lag_growth,
        }
        wave_entries = plan_waves(plan, rows, wave_size)
        plan_path = plan_file or (output_dir or Path(".")) / f"fleet-plan-{run_id}.json"
        if not do_apply:
            plan.result, plan.finished_at_ms = "dry_run", now_ms()
            plan.save(plan_path)
            click.echo(f"dry run: {len(plan.groups)} READY groups in {len(wave_entries)} waves; plan {plan_path}")
            return EXIT_OK
        options = ApplyOptions(wave_size, interval_s, max_lag_growth, stable_for_ms)
        io = FleetIO(zks, bootstrap, max_sizes, f"{who_am_i(zk_auth)} fleet-scan {run_id}", props)
        ok = apply_waves(
            io,
            plan,
            wave_entries,
            options,
            plan_path,
            on_event=lambda m: click.echo(m, err=True),
            still_locked=lock.held if lock is not None else lambda: True,
        )
        plan.finished_at_ms = now_ms()
        plan.save(plan_path)
        switched = len(plan.entries(Outcome.SWITCHED))
        click.echo(f"applied: {switched} groups switched to kafka; {plan.result}; plan {plan_path}")
        return EXIT_OK if ok else EXIT_FAILED


def _scan(items, settings, spark_master, partitions, no_progress, output_dir, fmt):
    """Run the Spark job (and write Parquet with it); returns (rows, seconds)."""
    from pyspark.sql import SparkSession

    from migrator.fleet import report
    from migrator.fleet.pipeline import is_local, row_schema, run_scan, ship_package, spark_session

    master = _master(spark_master)
    owned = SparkSession.getActiveSession() is None  # a caller's session (tests, notebooks) is left running
    spark = spark_session(master)
    try:
        if not is_local(spark.sparkContext.master):
            ship_package(spark)
        started = time.monotonic()
        progress = not no_progress and sys.stderr.isatty()
        try:
            rows = run_scan(spark, items, settings, partitions, progress=progress)
        except Exception as exc:  # a task failed on an executor: say why in one line
            raise MigratorError(f"the fleet scan failed on an executor: {_root_cause(exc)}") from exc
        elapsed = time.monotonic() - started
        if output_dir is not None and fmt == "parquet":

            def write_parquet(path: str) -> None:
                data = [tuple(getattr(r, f) for f in r.__dataclass_fields__) for r in rows]
                spark.createDataFrame(data, row_schema()).coalesce(1).write.mode("overwrite").parquet(path)

            path = report.write_rows(rows, output_dir, fmt, write_parquet=write_parquet)
            click.echo(f"rows written to {path}", err=True)
        return rows, elapsed
    finally:
        if owned and master is not None and is_local(master):
            spark.stop()


commands: list[click.Command] = [fleet_scan]
