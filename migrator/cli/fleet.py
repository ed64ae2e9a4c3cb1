"""`migrator fleet-scan`: classify every group of several ZooKeeper ensembles on Spark, optionally switch
the READY ones to kafka in waves (`--apply`), or undo such a run (`--rollback PLANFILE`).

`--zookeeper` takes one ensemble per value or several separated by `;` (a `,` separates the hosts of one
ensemble). See docs/fleet.md.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from migrator.cli.common import Connection, connection_options, parse_duration_ms
from migrator.cli.interrupts import interrupts_deferred
from migrator.errors import (
    EXIT_FAILED,
    EXIT_OK,
    EnvironmentProblem,
    Interrupted,
    RefusedError,
    UsageError,
)
from migrator.fleet.plan import entry_names
from migrator.fleet.scan import ScanSettings, group_filter, list_groups, now_ms, pair_bootstrap, split_ensembles
from migrator.fleet.spark_run import SparkLog, SparkOptions, root_cause, scan_on_spark
from migrator.zk.client import ZkTls
from migrator.zk.session import ZkSession, close

log = logging.getLogger(__name__)


SPARK_EXTRA = ("pyspark", "tqdm")


def _require_spark() -> None:
    """The scan runs on Spark, an optional extra: say which one to install instead of a traceback."""
    missing = [name for name in SPARK_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise EnvironmentProblem(
            f"fleet-scan needs the 'spark' extra ({', '.join(missing)} missing): pip install 'migrator[spark]'"
        )


def _fill_bootstrap(
    bootstrap: dict[str, str | None],
    zks: dict[str, ZkSession],
    needed: list[str],
    run: _Run,
    *,
    required: bool,
) -> dict[str, str | None]:
    """Ensembles without -b get the brokers registered under their /brokers/ids, at the endpoint of the
    `security.protocol` of the run's properties. A run that switches modes (`required`: --apply, --rollback) refuses,
    before writing anything, when an ensemble's Kafka cannot be found: its preflight could not see plain
    Kafka consumers (set-mode refuses the same way)."""
    from migrator.fleet.discover import ensemble_bootstrap

    filled = dict(bootstrap)
    for ensemble in needed:
        if not filled.get(ensemble):
            found = ensemble_bootstrap(zks[ensemble], ensemble, run.props.get("security.protocol"), run.zk_auth,
                                       run.zk_tls, run.connect_timeout)  # fmt: skip
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
def _clients(run: _Run, ensembles: list[str]) -> Iterator[dict[str, ZkSession]]:
    from migrator.zk.client import connect

    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    zks: dict[str, ZkSession] = {}
    try:
        for e in ensembles:
            zks[e] = connect(e, auth=run.zk_auth, timeout_s=run.connect_timeout, tls=run.zk_tls)
        yield zks
    finally:
        for zk in zks.values():
            close(zk)


@click.command("fleet-scan")
@connection_options(ensembles=True)
@click.option("--include", metavar="REGEX", help="Only groups whose name matches (search).")
@click.option("--exclude", metavar="REGEX", help="Skip groups whose name matches (search).")
@click.option(
    "--stable-for",
    default="30m",
    show_default=True,
    metavar="DURATION",
    help="READY needs no membership/mode change for this long.",
)
@click.option(
    "--abandoned-after",
    default="30d",
    show_default=True,
    metavar="DURATION",
    help="ABANDONED: no member, no live Kafka group and no offset commit for this long.",
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
    "--readiness",
    is_flag=True,
    help="The verdict: can each ensemble be retired? Exit 0 when every one can, 1 when not yet.",
)
@click.option("--cleanup", is_flag=True, help="Archive and delete every finished group in waves (dry run: --execute).")
@click.option("--abandoned", is_flag=True, help="With --cleanup: the ABANDONED groups too.")
@click.option(
    "--cutover",
    "cutover_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Cut over the groups listed in this file (one a line) in waves (dry run: --execute).",
)
@click.option("--execute", is_flag=True, help="With --cleanup or --cutover: act (default: list the waves).")
@click.option("--archive-dir", metavar="DIR", help="With --cleanup: where the archives go (default: --output, or .).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--verbose", is_flag=True, help="Print the path of the log that holds Spark's and the JVM's output.")
def fleet_scan(conn: Connection, rollback_file: Path | None, **options: Any) -> int:
    """Scan every consumer group, classify it, and (with --apply) switch the READY ones to kafka.

    \b
    `--bootstrap-server` takes one cluster for all ensembles, or one per ensemble separated by `;`; default:
    each ensemble's brokers under /brokers/ids (--apply and --rollback refuse when there are none).
    Statuses: LEGACY, MIGRATING, READY, KAFKA, CUT_OVER, MIXED_KAFKA_CONSUMERS, BLOCKED, ORPHANED, ABANDONED,
    INCONSISTENT. --readiness: the verdict whether each ensemble can be retired (exit 0 ready, 1 not yet).
    Exit codes: 0 done, 1 a wave was rolled back or a restore failed, 2 refused (another scanner holds
    the lock, bad arguments), 130 interrupted (the switched groups and the plan file are named).
    """
    if rollback_file is not None and options["do_apply"]:
        raise UsageError("--rollback and --apply exclude each other")
    if options["readiness"] and (rollback_file is not None or options["do_apply"] or options["cleanup"]):
        raise UsageError("--readiness only reads: it excludes --apply, --cleanup and --rollback")
    if options["cleanup"] and (rollback_file is not None or options["do_apply"]):
        raise UsageError("--cleanup excludes --apply and --rollback")
    if options["abandoned"] and not options["cleanup"]:
        raise UsageError("--abandoned goes with --cleanup")
    if options["execute"] and not (options["cleanup"] or options["cutover_file"]):
        raise UsageError("--execute goes with --cleanup or --cutover")
    if options["cutover_file"] is not None and (
        options["cleanup"] or options["do_apply"] or options["readiness"] or rollback_file is not None
    ):
        raise UsageError("--cutover excludes --apply, --cleanup, --readiness and --rollback")
    run = _run_of(conn, **options)
    if rollback_file is not None:
        from migrator.fleet.plan import CLEANUP_KIND, CUTOVER_KIND, plan_kind

        kind = plan_kind(rollback_file)
        if kind == CLEANUP_KIND:
            return _rollback_cleanup(run, rollback_file)
        if kind == CUTOVER_KIND:
            return _rollback_cutover(run, rollback_file)
        return _rollback(run, rollback_file)
    if run.cutover_file is not None:
        return _cutover_waves(run, run.cutover_file)
    _require_spark()
    return _scan_and_apply(run)


def _run_of(
    conn: Connection,
    *,
    stable_for: str,
    abandoned_after: str,
    wave_interval: str,
    spark_master: str | None,
    partitions: int | None,
    no_progress: bool,
    verbose: bool,
    **options: Any,
) -> _Run:
    """The invocation's options, parsed and checked (nothing connected yet)."""
    ensembles = split_ensembles([conn.zookeeper])
    run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:6]
    return _Run(
        ensembles=ensembles,
        bootstrap=pair_bootstrap(ensembles, conn.bootstrap_servers),
        bootstrap_option=conn.bootstrap_servers,
        props=conn.kafka_properties,
        zk_auth=conn.zk_auth,
        zk_tls=conn.zk_tls,
        connect_timeout=conn.connect_timeout_s,
        run_id=run_id,
        stable_for_ms=parse_duration_ms(stable_for, "--stable-for"),
        abandoned_after_ms=parse_duration_ms(abandoned_after, "--abandoned-after"),
        interval_s=parse_duration_ms(wave_interval, "--wave-interval") / 1000,
        spark=SparkOptions(spark_master, partitions, progress=not no_progress),
        spark_log=SparkLog(Path(tempfile.gettempdir()) / f"migrator-fleet-scan-{run_id}.log", verbose),
        **options,
    )


@dataclass(frozen=True)
class _Run:
    """One fleet-scan invocation, its options parsed."""

    ensembles: list[str]
    bootstrap: dict[str, str | None]
    bootstrap_option: str | None
    props: dict[str, str]
    zk_auth: str | None
    zk_tls: ZkTls | None
    connect_timeout: float
    run_id: str
    include: str | None
    exclude: str | None
    stable_for_ms: int
    abandoned_after_ms: int
    interval_s: float
    wave_size: int
    max_lag_growth: int
    do_apply: bool
    readiness: bool
    cleanup: bool
    cutover_file: Path | None
    abandoned: bool
    execute: bool
    archive_dir: str | None
    plan_file: Path | None
    output_dir: Path | None
    fmt: str
    spark: SparkOptions
    spark_log: SparkLog

    @property
    def json_on_stdout(self) -> bool:
        """`--format json` without --output prints JSON on stdout (the rows, or the verdict with --readiness),
        everything else on stderr."""
        return self.fmt == "json" and self.output_dir is None

    @property
    def rows_on_stdout(self) -> bool:
        return self.json_on_stdout and not self.readiness

    def say(self, text: str) -> None:
        click.echo(text, err=self.json_on_stdout)

    def who(self, zk_auth_identity: str) -> str:
        return f"{zk_auth_identity} fleet-scan {self.run_id}"


def _rollback(run: _Run, rollback_file: Path) -> int:
    """`--rollback PLANFILE`: restore what the plan switched, then watch those groups settle on zookeeper."""
    from migrator.fleet.apply import FleetIO
    from migrator.fleet.lock import FleetLock
    from migrator.fleet.plan import Outcome, Plan
    from migrator.fleet.waves import rollback_apply
    from migrator.ops.modes import who_am_i

    plan = Plan.load(rollback_file)
    needed = _needed(run, plan)
    with _clients(run, needed) as zks:
        given = {e: run.bootstrap.get(e) or next(iter(run.bootstrap.values())) for e in needed}
        plan_boot = _fill_bootstrap(given, zks, needed, run, required=True)
        with FleetLock(zks[needed[0]], run.run_id) as rollback_lock:
            who = f"{run.who(who_am_i(run.zk_auth))} ({rollback_lock.identity})"
            with contextlib.closing(FleetIO(zks, plan_boot, {}, who, run.props)) as io:
                try:
                    back, failed = rollback_apply(io, plan, rollback_file, run.run_id, interrupts_deferred)
                except KeyboardInterrupt:
                    raise Interrupted(
                        f"interrupted; restored so far: {plan.names(Outcome.RESTORED)}; the plan {rollback_file} "
                        f"still lists the others as switched: run `fleet-scan --rollback {rollback_file}` again"
                    ) from None
                click.echo(
                    f"rollback of run {plan.run_id}: restored {entry_names(back)}; {failed} failed ({rollback_file})"
                )
                settled = _watch_restored(io, back, float(plan.options.get("wave_interval_s") or 60.0))
    return EXIT_OK if settled and not failed else EXIT_FAILED


def _watch_restored(io: Any, back: list[Any], interval_s: float) -> bool:
    """Watch the groups just restored (up to a wave interval) until they settled back on zookeeper."""
    from migrator.fleet.apply import watch_restored

    unsettled = watch_restored(io, back, interval_s) if back else {}
    for key, found in sorted(unsettled.items()):
        _warn(f"{key} has not settled on zookeeper within {interval_s:g}s: {'; '.join(found)}")
    if back and not unsettled:
        click.echo(f"restored groups settled back on zookeeper: {entry_names(back)}")
    return not unsettled


def _scan_and_apply(run: _Run) -> int:
    """Scan (and print or write the rows); then the dry run's plan, or `--apply`'s waves."""
    from migrator.fleet.lock import FleetLock

    with contextlib.ExitStack() as stack:
        zks = stack.enter_context(_clients(run, run.ensembles))
        # the dry run finds the brokers exactly as --apply does, so that it previews the apply
        writes = run.do_apply or (run.cleanup and run.execute)
        bootstrap = _fill_bootstrap(run.bootstrap, zks, run.ensembles, run, required=writes)
        lock = stack.enter_context(FleetLock(zks[run.ensembles[0]], run.run_id)) if run.do_apply else None
        settings, rows = _scan_fleet(run, zks, bootstrap, spark_stack=stack if run.cleanup else None)
        verdicts = _readiness(run, zks, rows)
        if run.readiness:
            return EXIT_OK if all(v.ready for v in verdicts) else EXIT_FAILED
        if run.cleanup:
            return _cleanup(run, zks, settings, rows)
        plan, wave_entries, plan_path = _plan(run, rows, lock.identity if lock else f"dry run {run.run_id}", settings)
        if not run.do_apply:
            run.say(f"dry run: {len(plan.groups)} READY groups in {len(wave_entries)} waves; plan {plan_path}")
            for entries in wave_entries:
                run.say(f"  wave {entries[0].wave}: {entry_names(entries)}")
            return EXIT_OK
        return _apply(run, zks, settings, plan, wave_entries, plan_path, lock)


def _scan_fleet(
    run: _Run,
    zks: dict[str, ZkSession],
    bootstrap: dict[str, str | None],
    spark_stack: contextlib.ExitStack | None = None,
) -> tuple[Any, list[Any]]:
    """Classify every group on Spark; the rows go to --output, or to stdout for `--format json` alone."""
    from migrator.fleet import report
    from migrator.fleet.discover import group_max_sizes

    keep = group_filter(run.include, run.exclude)
    items = [(e, g) for e in run.ensembles for g in list_groups(zks[e], keep)]
    click.echo(f"{len(items)} groups in {len(run.ensembles)} ensemble(s)", err=True)
    settings = ScanSettings(
        bootstrap=bootstrap,
        stable_for_ms=run.stable_for_ms,
        now_ms=now_ms(),
        group_max_size=group_max_sizes(bootstrap, run.props, run.connect_timeout, _warn),
        zk_auth=run.zk_auth,
        zk_tls=run.zk_tls,
        kafka_properties=run.props,
        zk_timeout_s=run.connect_timeout,
        kafka_timeout_s=run.connect_timeout,
        abandoned_after_ms=run.abandoned_after_ms,
    )
    if run.spark_log.verbose:
        click.echo(f"spark log: {run.spark_log.path}", err=True)
    parquet_dir = run.output_dir if run.fmt == "parquet" else None
    rows, elapsed, written = scan_on_spark(items, settings, run.spark, run.spark_log, parquet_dir, keep=spark_stack)
    if run.output_dir is not None:
        click.echo(f"rows written to {written or report.write_rows(rows, run.output_dir, run.fmt)}", err=True)
    if run.rows_on_stdout:
        click.echo(report.to_json(rows), nl=False)
    run.say(report.summary(rows, elapsed))
    return settings, rows


def _cleanup(run: _Run, zks: dict[str, ZkSession], settings: Any, rows: list[Any]) -> int:
    """`--cleanup`: the finished (and with --abandoned the abandoned) groups in waves; `--execute` cleans them
    under the scanner lock, one Spark job per wave, and stops after a wave where a group was not cleaned."""
    from migrator.fleet.cleanup import plan_entries, targets
    from migrator.fleet.plan import CleanupRun

    archive_dir = str(Path(run.archive_dir or run.output_dir or ".").absolute()) if "://" not in (
        run.archive_dir or "") else str(run.archive_dir)  # fmt: skip
    entries = plan_entries(targets(rows, run.abandoned), run.wave_size, archive_dir)
    plan = CleanupRun(run.run_id, f"dry run {run.run_id}", not run.execute, settings.now_ms, groups=entries)
    plan.options = {"ensembles": run.ensembles, "abandoned": run.abandoned, "wave_size": run.wave_size,
                    "abandoned_after_ms": run.abandoned_after_ms, "archive_dir": archive_dir}  # fmt: skip
    plan_path = _plan_path(run, "cleanup")
    if not run.execute:
        return _dry_run_waves(run, plan, plan_path, "to clean")
    return _clean_waves(run, zks, settings, plan, plan_path)


def _plan_path(run: _Run, kind: str) -> Path:
    """--plan-file, else `fleet-<kind>-<run>.json` under --output, else in the current directory."""
    return run.plan_file or (run.output_dir or Path(".")) / f"fleet-{kind}-{run.run_id}.json"


def _dry_run_waves(run: _Run, plan: Any, plan_path: Path, what: str) -> int:
    """A `--cleanup` or `--cutover` without --execute: the plan saved, its waves listed."""
    from migrator.fleet import waves

    waves.dry_run(plan, plan_path)
    numbers = waves.wave_numbers(plan.groups)
    run.say(f"dry run: {len(plan.groups)} groups {what} in {len(numbers)} waves; plan {plan_path}")
    for wave in numbers:
        run.say(f"  wave {wave}: {entry_names(waves.in_wave(plan.groups, wave))}")
    return EXIT_OK


def _warn(line: str) -> None:
    click.echo(f"warning: {line}", err=True)


def _output(say: Any) -> Any:
    """Lines to `say`, each group in trouble on a `warning:` line on stderr."""
    from migrator.fleet.waves import WaveOutput

    return WaveOutput(say, _warn)


def _clean_waves(run: _Run, zks: dict[str, ZkSession], settings: Any, plan: Any, plan_path: Path) -> int:
    from pyspark.sql import SparkSession

    from migrator.fleet.cleanup import CleanSettings
    from migrator.fleet.plan import CleanOutcome
    from migrator.fleet.waves import WaveFailed, clean_waves

    clean = CleanSettings(dict(settings.bootstrap), run.zk_auth, run.zk_tls, dict(run.props), run.connect_timeout,
                          run.abandoned_after_ms / 1000, settings.now_ms)  # fmt: skip
    spark = SparkSession.getActiveSession()
    try:
        clean_waves(plan, plan_path, zks[run.ensembles[0]], run.run_id, clean, spark, _output(run.say))
    except WaveFailed as failed:  # a task failed on an executor: say why in one line
        cause = failed.__cause__ or failed
        raise run.spark_log.failed(f"wave {failed.wave} failed on an executor: {root_cause(cause)}") from cause
    run.say(f"cleaned {len(plan.entries(CleanOutcome.DELETED))} groups; plan {plan_path}; undo with "
            f"`migrator fleet-scan -z '{';'.join(run.ensembles)}' --rollback {plan_path}`")  # fmt: skip
    return _exit_of(plan)


def _exit_of(plan: Any) -> int:
    """0 when every wave of the run was done, 1 when it stopped."""
    from migrator.fleet.plan import Result

    return EXIT_OK if plan.result == Result.APPLIED else EXIT_FAILED


def _needed(run: _Run, plan: Any) -> list[str]:
    """The ensembles of the plan's groups, the first of the run (the lock's) first."""
    first = run.ensembles[0]
    return sorted({e.ensemble for e in plan.groups} | {first}, key=lambda e: e != first)


def _rollback_cleanup(run: _Run, plan_path: Path) -> int:
    """`--rollback` of a cleanup: every cleaned group put back from its archive, latest wave first."""
    from migrator.fleet.plan import CleanupRun
    from migrator.fleet.waves import rollback_cleanup

    plan = CleanupRun.load(plan_path)
    with _clients(run, _needed(run, plan)) as zks:
        undone = rollback_cleanup(plan, plan_path, zks, run.zk_auth, zks[run.ensembles[0]], run.run_id,
                                  interrupts_deferred)  # fmt: skip
    return _rollback_done(plan, plan_path, undone, "restored")


def _cutover_waves(run: _Run, groups_file: Path) -> int:
    """`--cutover GROUPS_FILE`: the listed groups of the first ensemble in waves; with --execute, under the
    scanner lock, each wave fenced together, then each group waited for (up to --wave-interval), its offsets
    carried and its mode recorded, by `migrator cutover`'s own steps. Stops after a wave with trouble."""
    from migrator.fleet.waves import cutover_plan, cutover_waves, listed_groups

    groups = listed_groups(groups_file.read_text())
    if not groups:
        raise UsageError(f"--cutover {groups_file}: no group listed")
    first = run.ensembles[0]
    plan = cutover_plan(run.run_id, first, groups, run.wave_size, run.interval_s, dry=not run.execute)
    plan_path = _plan_path(run, "cutover")
    if not run.execute:
        return _dry_run_waves(run, plan, plan_path, "to cut over")
    if not run.zk_auth:
        raise RefusedError("--cutover needs the admin identity (--zk-auth) to set the fence; nothing was written")
    with _clients(run, [first]) as zks, _cutover_runners(run, zks[first]) as runner_of:
        cutover_waves(plan, plan_path, zks[first], run.run_id, runner_of, _output(click.echo), interrupts_deferred)
    click.echo(f"start each cut-over group's Kafka consumers; plan {plan_path}; undo with "
               f"`migrator fleet-scan -z '{first}' --zk-auth ... --rollback {plan_path}`")  # fmt: skip
    return _exit_of(plan)


@contextlib.contextmanager
def _cutover_runners(run: _Run, zk: ZkSession) -> Iterator[Any]:
    """`group -> Runner` on one ZooKeeper session and one Kafka admin client."""
    from migrator.kafka.admin import KafkaAdmin
    from migrator.ops.cutover import Runner
    from migrator.ops.modes import who_am_i

    first = run.ensembles[0]
    bootstrap = _fill_bootstrap(run.bootstrap, {first: zk}, [first], run, required=True)[first] or ""
    admin = KafkaAdmin(bootstrap, run.props, run.connect_timeout)
    who = run.who(who_am_i(run.zk_auth))
    try:
        yield lambda group: Runner(zk, admin, group, run.zk_auth, who, run.interval_s)
    finally:
        admin.close()


def _rollback_cutover(run: _Run, plan_path: Path) -> int:
    """`--rollback` of a fleet cutover: each group carried back to ZooKeeper and its fence lifted."""
    from migrator.fleet.plan import CutoverRun
    from migrator.fleet.waves import rollback_cutover

    plan = CutoverRun.load(plan_path)
    first = run.ensembles[0]
    with _clients(run, [first]) as zks, _cutover_runners(run, zks[first]) as runner_of:
        undone = rollback_cutover(plan, plan_path, zks[first], run.run_id, runner_of, interrupts_deferred)
    return _rollback_done(plan, plan_path, undone, "back on zookeeper")


def _rollback_done(plan: Any, plan_path: Path, undone: Any, what: str) -> int:
    """The rollback's failures named, and its count; exit 1 when one failed."""
    from migrator.fleet.waves import trouble_line

    for entry in undone.failed:
        _warn(trouble_line(entry))
    click.echo(f"rollback of {plan.KIND} {plan.run_id}: {undone.tried - len(undone.failed)} groups {what}; "
               f"{len(undone.failed)} failed ({plan_path})")  # fmt: skip
    return EXIT_FAILED if undone.failed else EXIT_OK


def _readiness(run: _Run, zks: dict[str, ZkSession], rows: list[Any]) -> list[Any]:
    """The verdict per ensemble: printed after the summary, written beside the rows, or (--readiness with
    `--format json` alone) printed as JSON on stdout."""
    import json

    from migrator.fleet import readiness
    from migrator.fleet.retire import verdicts as read_verdicts

    scanned = group_filter(run.include, run.exclude)
    verdicts = read_verdicts(run.ensembles, rows, zks, scanned, run.connect_timeout, run.archive_dir)
    doc = {"ready": all(v.ready for v in verdicts), "ensembles": [readiness.to_doc(v) for v in verdicts]}
    if run.readiness and run.json_on_stdout:
        click.echo(json.dumps(doc, sort_keys=True))
    else:
        run.say("\n".join(readiness.to_text(v) for v in verdicts))
    if run.output_dir is not None:
        path = run.output_dir / "fleet-readiness.json"
        path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        click.echo(f"readiness written to {path}", err=True)
    return verdicts


def _plan(run: _Run, rows: list[Any], holder: str, settings: Any) -> tuple[Any, list[Any], Path]:
    """The run's plan (READY groups cut into waves), saved before anything is switched."""
    from migrator.fleet.apply import plan_waves
    from migrator.fleet.plan import Plan, Result

    plan = Plan(run_id=run.run_id, holder=holder, dry_run=not run.do_apply, started_at_ms=settings.now_ms)
    plan.options = {
        "ensembles": run.ensembles,
        "bootstrap_servers": run.bootstrap_option,
        "include": run.include,
        "exclude": run.exclude,
        "stable_for_ms": run.stable_for_ms,
        "wave_size": run.wave_size,
        "wave_interval_s": run.interval_s,
        "max_lag_growth": run.max_lag_growth,
    }
    wave_entries = plan_waves(plan, rows, run.wave_size)
    plan_path = _plan_path(run, "plan")
    if not run.do_apply:
        plan.result, plan.finished_at_ms = Result.DRY_RUN, now_ms()
    plan.save(plan_path)
    return plan, wave_entries, plan_path


def _apply(run: _Run, zks, settings, plan, wave_entries, plan_path: Path, lock) -> int:
    """`--apply`: the waves; Ctrl-C leaves the plan saying `interrupted` and names what stays switched."""
    from migrator.fleet.apply import ApplyOptions, FleetIO, apply_waves
    from migrator.fleet.plan import Outcome, Result
    from migrator.ops.modes import who_am_i

    options = ApplyOptions(run.wave_size, run.interval_s, run.max_lag_growth, run.stable_for_ms)
    io = FleetIO(zks, settings.bootstrap, settings.group_max_size, run.who(who_am_i(run.zk_auth)), run.props)
    run.say(f"plan {plan_path}")
    try:
        ok = apply_waves(
            io, plan, wave_entries, options, plan_path, on_event=lambda m: click.echo(m, err=True),
            still_locked=lock.held, guard=interrupts_deferred,
        )  # fmt: skip
    except KeyboardInterrupt:
        io.close()
        plan.result, plan.finished_at_ms = Result.INTERRUPTED, now_ms()
        plan.save(plan_path)
        raise Interrupted(
            f"interrupted; switched to kafka and left so: {plan.names(Outcome.SWITCHED)}; plan {plan_path}; undo with "
            f"`migrator fleet-scan -z '{';'.join(run.ensembles)}' --rollback {plan_path}`"
        ) from None
    io.close()
    plan.finished_at_ms = now_ms()
    plan.save(plan_path)
    run.say(f"applied: switched to kafka: {plan.names(Outcome.SWITCHED)}; {plan.result}; plan {plan_path}")
    return EXIT_OK if ok else EXIT_FAILED


commands: list[click.Command] = [fleet_scan]
