"""The Spark job: group names → partitions → (per partition: read + classify) → one DataFrame of rows.

The driver only lists group names (one `get_children` per ensemble); the reads run on executors, each
partition with its own clients and pipelined requests. `local[*]` is the default master, and the same
code runs unchanged under `spark-submit` on a cluster (the package is shipped to executors as a zip).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from migrator.fleet.cleanup import CleanSettings, clean_slice
from migrator.fleet.model import ROW_FIELDS, FleetRow
from migrator.fleet.plan import CleanupEntry
from migrator.fleet.scan import ScanSettings, scan_slice

GROUPS_PER_PARTITION = 1000
JOB_GROUP = "migrator-fleet-scan"


def row_schema() -> Any:
    from pyspark.sql.types import ArrayType, IntegerType, LongType, StringType, StructField, StructType

    long_fields = {"mode_mtime_ms", "stable_since_ms", "lag", "scanned_at_ms"}
    str_fields = {"ensemble", "group", "status", "dialect", "route", "mode", "kafka_state"}
    fields = []
    for name in ROW_FIELDS:
        if name == "reasons":
            kind: Any = ArrayType(StringType())
        elif name in str_fields:
            kind = StringType()
        elif name in long_fields:
            kind = LongType()
        else:
            kind = IntegerType()
        fields.append(StructField(name, kind, nullable=True))
    return StructType(fields)


def is_local(master: str | None) -> bool:
    return master is None or master.startswith("local")


def spark_session(
    master: str | None = "local[*]",
    app_name: str = "migrator-fleet-scan",
    extra: dict | None = None,
    log_path: Path | None = None,
):
    """A SparkSession; `master=None` leaves the choice to spark-submit. Quiet logs, no UI in local mode.

    With `log_path`, a JVM this call starts writes its stdout and stderr (Spark's start-up lines, its log,
    the executors' Python workers) to that file instead of the terminal; a JVM already running (spark-submit,
    a caller's session) keeps its own.
    """
    from pyspark.sql import SparkSession

    local = master is not None and is_local(master)  # None: spark-submit's master, maybe a cluster
    conf = {
        "spark.app.name": app_name,
        "spark.ui.enabled": "false" if local else "true",
        "spark.ui.showConsoleProgress": "false" if local else "true",  # local mode shows our tqdm bar
        "spark.sql.shuffle.partitions": "4" if local else "200",
        "spark.python.worker.reuse": "true",
    }
    if master is not None:
        conf["spark.master"] = master
    if local:
        # Local executors run this interpreter (and its virtualenv), not whatever `python3` is on PATH;
        # PySpark reads the variable when the context starts.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf.update(extra or {})
    if log_path is not None:
        _start_logged_context(conf, log_path)
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _start_logged_context(conf: dict[str, str], log_path: Path) -> None:
    """Start the JVM (and the SparkContext on it) with its output in `log_path`, unless one runs already."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if getattr(SparkContext, "_gateway", None) is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    spark_conf = SparkConf(loadDefaults=False).setAll(list(conf.items()))
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": log, "stderr": log})
    SparkContext(conf=spark_conf, gateway=gateway)


def package_zip(target: Path) -> Path:
    """A zip of the `migrator` package (sources and data files), importable from `sys.path`."""
    root = Path(__file__).resolve().parents[1]
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".properties", ".xml"):
                zf.write(path, Path("migrator") / path.relative_to(root))
    return target


def ship_package(spark: Any) -> None:
    """Add the package to the executors' path, so a cluster needs only the dependencies installed."""
    target = Path(tempfile.mkdtemp(prefix="migrator-fleet-")) / "migrator.zip"
    spark.sparkContext.addPyFile(str(package_zip(target)))


def partitions_for(n_groups: int, parallelism: int) -> int:
    """At least one partition per core, and no partition larger than `GROUPS_PER_PARTITION` groups."""
    return max(1, min(max(n_groups, 1), max(parallelism, -(-n_groups // GROUPS_PER_PARTITION))))


class _Progress:
    """A tqdm bar over finished partitions (in groups), fed by Spark's status tracker from the driver."""

    def __init__(self, spark: Any, total_groups: int, partitions: int) -> None:
        self._spark = spark
        self._total = total_groups
        self._partitions = partitions
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fleet-progress", daemon=True)

    def __enter__(self) -> _Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _done_tasks(self) -> int:
        tracker = self._spark.sparkContext.statusTracker()
        done = 0
        for job_id in tracker.getJobIdsForGroup(JOB_GROUP):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job else ():
                stage = tracker.getStageInfo(stage_id)
                if stage is not None and stage.numTasks == self._partitions:
                    done = max(done, stage.numCompletedTasks)
        return done

    def _run(self) -> None:
        try:
            from tqdm import tqdm
        except ImportError:
            return
        with tqdm(total=self._total, unit="group", desc="fleet scan", leave=False) as bar:
            while True:
                finished = self._stop.wait(0.5)
                shown = (
                    self._total if finished else min(self._total, self._done_tasks() * self._total // self._partitions)
                )
                bar.update(shown - bar.n)
                if finished:
                    return


def scan_dataframe(spark: Any, items: Sequence[tuple[str, str]], settings: ScanSettings, partitions: int | None = None):
    """The (lazy) DataFrame of rows for `items` = (ensemble, group) pairs, and its partition count.

    The names are spread with `parallelize` (no shuffle), so the scan is one stage whose finished tasks
    are the progress.
    """
    sc = spark.sparkContext
    n = partitions or partitions_for(len(items), sc.defaultParallelism)
    names = spark.createDataFrame(sc.parallelize(list(items), n), "ensemble string, group string")

    def run(rows: Any) -> Any:
        for row in scan_slice(((r.ensemble, r.group) for r in rows), settings):
            yield tuple(getattr(row, f) for f in ROW_FIELDS)

    return spark.createDataFrame(names.rdd.mapPartitions(run), row_schema()), n


def run_scan(
    spark: Any,
    items: Sequence[tuple[str, str]],
    settings: ScanSettings,
    partitions: int | None = None,
    progress: bool = True,
) -> list[FleetRow]:
    """Scan every item and return the rows on the driver (a fleet's rows are small: ~1 KiB per group)."""
    if not items:
        return []
    sc = spark.sparkContext
    sc.setJobGroup(JOB_GROUP, f"fleet scan of {len(items)} groups", interruptOnCancel=True)
    df, n = scan_dataframe(spark, items, settings, partitions)
    show = progress and is_local(sc.master) and os.environ.get("MIGRATOR_NO_PROGRESS") is None
    if show:
        with _Progress(spark, len(items), n):
            collected = df.collect()
    else:
        collected = df.collect()
    return [FleetRow.from_dict(r.asDict()) for r in collected]


def run_cleanup_wave(spark: Any, entries: Sequence[CleanupEntry], settings: CleanSettings) -> list[CleanupEntry]:
    """One wave of a fleet cleanup as one Spark job: each task archives and deletes its groups (`clean_slice`)."""
    if not entries:
        return []
    sc = spark.sparkContext
    sc.setJobGroup(JOB_GROUP, f"fleet cleanup of {len(entries)} groups", interruptOnCancel=True)
    n = max(1, min(len(entries), sc.defaultParallelism))
    return sc.parallelize(list(entries), n).mapPartitions(lambda part: clean_slice(part, settings)).collect()
