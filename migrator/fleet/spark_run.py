"""The fleet scan's Spark job as the driver runs it: the session (a caller's own is left running), the package
shipped to a cluster's executors, the rows collected (Parquet written by Spark itself), and Spark's and the
JVM's own output kept in a log of their own (`SparkLog`), named in the one line a failure leaves."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from migrator.errors import MigratorError
from migrator.fleet.model import FleetRow
from migrator.fleet.scan import ScanSettings

_CAUSE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Unavailable|Problem)): (.+)$")


def root_cause(exc: BaseException) -> str:
    """The last `SomeError: message` line of a (Py4J-wrapped) executor traceback."""
    found = [m for m in (_CAUSE.match(line.strip()) for line in str(exc).splitlines()) if m]
    if not found:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    name, message = found[-1].groups()
    return f"{name.rsplit('.', 1)[-1]}: {message}"


def master_of(option: str | None) -> str | None:
    """None under spark-submit (its --master rules), else the option or local[*]."""
    if option:
        return option
    return None if os.environ.get("PYSPARK_GATEWAY_PORT") else "local[*]"


@dataclass
class SparkLog:
    """Where the JVM's and Spark's own output goes, instead of the operator's terminal.

    Kept when `verbose` (its path printed at the start) or when the scan failed (its path in the error);
    removed after a scan that went well otherwise.
    """

    path: Path
    verbose: bool
    kept: bool = False

    def failed(self, message: str) -> MigratorError:
        self.kept = True
        return MigratorError(f"{message}; Spark's log: {self.path}")

    def done(self) -> None:
        if not self.verbose and not self.kept:
            self.path.unlink(missing_ok=True)


@dataclass(frozen=True)
class SparkOptions:
    master: str | None  # --spark-master
    partitions: int | None
    progress: bool


class Collected(NamedTuple):
    rows: list[FleetRow]
    elapsed_s: float
    parquet: Path | None  # where Spark wrote the rows (`--format parquet` with --output)


def scan_on_spark(
    items: Sequence[tuple[str, str]],
    settings: ScanSettings,
    options: SparkOptions,
    log: SparkLog,
    parquet_dir: Path | None,
    keep: contextlib.ExitStack | None = None,
) -> Collected:
    """Run the scan's Spark job (`parquet_dir`: write the rows there as Parquet with it); Spark's output goes to
    `log`. `keep`: the session stays up for a cleanup's waves; its end (and the log's) goes onto that stack."""
    from pyspark.sql import SparkSession

    from migrator.fleet.pipeline import is_local, ship_package, spark_session

    master = master_of(options.master)
    owned = SparkSession.getActiveSession() is None  # a caller's session (tests, notebooks) is left running
    try:
        spark = spark_session(master, log_path=log.path)
    except Exception as exc:  # the JVM did not start: its reason is in the log
        raise log.failed(f"Spark did not start: {root_cause(exc)}") from exc
    try:
        if not is_local(spark.sparkContext.master):
            ship_package(spark)
        result = _collect(spark, items, settings, options, log, parquet_dir)
    finally:
        ours = owned and master is not None and is_local(master)
        if keep is not None:
            keep.callback(log.done)
            if ours:
                keep.callback(spark.stop)
        elif ours:
            spark.stop()
    if keep is None:
        log.done()
    return result


def _collect(
    spark: Any,
    items: Sequence[tuple[str, str]],
    settings: ScanSettings,
    options: SparkOptions,
    log: SparkLog,
    parquet_dir: Path | None,
) -> Collected:
    from migrator.fleet import report
    from migrator.fleet.pipeline import row_schema, run_scan

    started = time.monotonic()
    progress = options.progress and sys.stderr.isatty()
    try:
        rows = run_scan(spark, items, settings, options.partitions, progress=progress)
    except Exception as exc:  # a task failed on an executor: say why in one line
        raise log.failed(f"the fleet scan failed on an executor: {root_cause(exc)}") from exc
    elapsed = time.monotonic() - started
    if parquet_dir is None:
        return Collected(rows, elapsed, None)

    def write_parquet(path: str) -> None:
        data = [tuple(getattr(r, f) for f in r.__dataclass_fields__) for r in rows]
        spark.createDataFrame(data, row_schema()).coalesce(1).write.mode("overwrite").parquet(path)

    return Collected(rows, elapsed, report.write_rows(rows, parquet_dir, "parquet", write_parquet=write_parquet))
