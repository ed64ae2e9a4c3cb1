#!/usr/bin/env python3
"""Benchmark: `migrator fleet-scan` over many synthetic groups on a Spark standalone cluster.

    python -m benchmarks.fleet_scale                                  # 25,000, 50,000, 100,000 groups
    python -m benchmarks.fleet_scale --sizes 2000,4000,8000 --ensembles 2
    python -m benchmarks.fleet_scale --quick                          # 1,000, 2,000, 4,000 groups
    python -m benchmarks.fleet_scale --replot results/fleet_scale-….json   # its PNG again

Starts `--ensembles` standalone ZooKeeper servers (each one "ensemble", from the project's jars) and a Spark
standalone master with 2 workers of 1 core each (started from the pyspark installation, `tests.helpers.spark`).
Grows a synthetic fleet (`migrator.fleet.synthetic`: legacy, migrating and bridge groups, both dialects' nodes,
members and owners ephemeral) step by step to each size, spread evenly over the ensembles, one writer process
per ensemble. At each size it runs the scan as an operator does, `spark-submit scripts/fleet_scan.py` against
all ensembles (no Kafka: the synthetic groups have none), once with one executor (`--total-executor-cores 1`:
one worker's core) and once with two (one per worker), in alternating order. Each point reports the scan time
the CLI measures (the Spark job, from its first task to the collected rows), groups/s, and apart from it the
rest of the submit (JVMs, session, executors registering, listing, writing the rows): start-up. Per executor
count a least-squares line over the sizes gives the fixed cost, the cost per group and R^2; the 1-vs-2 ratio is
scan time with one executor over scan time with two. Every scan's statuses are checked against those the
synthetic layout must give. Results go to benchmarks/results/fleet_scale-*.json, with a PNG of the scan times
against groups beside it.

Everything started (ZooKeeper servers, writer processes, the Spark daemons) is stopped on exit, Ctrl-C included.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SIZES = (25_000, 50_000, 100_000)
QUICK_SIZES = (1_000, 2_000, 4_000)
ZK_HEAP = "-Xmx3g"
"""~29 znodes per synthetic group: 25,000 groups per server (100,000 over 4) are ~730,000 znodes in one server."""
SESSION_TIMEOUT_S = 60
SCAN_TIMEOUT_S = 3600


# ----- pure helpers ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Batch:
    """Groups `<prefix>-000000…` written to one ensemble, by one writer, on the way to a size."""

    ensemble: int
    prefix: str
    groups: int
    seed: int


def plan_batches(sizes: Sequence[int], ensembles: int, tag: str) -> list[list[Batch]]:
    """Per size (ascending), the batches that grow the fleet from the previous size to it, spread evenly over
    the ensembles (the first ensembles take the remainder). Each batch has its own prefix and seed."""
    if ensembles < 1 or any(b <= a for a, b in itertools.pairwise(sizes)) or not sizes or sizes[0] < 1:
        raise ValueError(f"sizes must be ascending and positive, ensembles at least 1: {sizes}, {ensembles}")
    steps, previous = [], 0
    for step, size in enumerate(sizes):
        added = size - previous
        share, extra = divmod(added, ensembles)
        batches = [
            Batch(e, f"{tag}s{step}e{e}", share + (1 if e < extra else 0), seed=step * 1000 + e)
            for e in range(ensembles)
        ]
        steps.append([b for b in batches if b.groups > 0])
        previous = size
    return steps


def include_regex(batches: Sequence[Batch]) -> str:
    """The `--include` that selects exactly these batches' groups."""
    return "^(" + "|".join(sorted({b.prefix for b in batches})) + ")-"


def expected_statuses(batches: Sequence[Batch]) -> dict[str, int]:
    """How many groups of each status the scan must report for these batches (no Kafka facts)."""
    from migrator.fleet.synthetic import plan_fleet

    counts: Counter[str] = Counter()
    for b in batches:
        counts.update(shape.expected_status.value for shape in plan_fleet(b.groups, b.prefix, b.seed).shapes.values())
    return dict(counts)


@dataclass(frozen=True, slots=True)
class LineFit:
    """y = intercept + slope * x by least squares, and how well it fits (R^2; 1.0 when every y is equal)."""

    slope: float
    intercept: float
    r2: float


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> LineFit:
    if len(xs) != len(ys) or len(xs) < 2 or len(set(xs)) < 2:
        raise ValueError("a line needs at least two distinct x values, one y each")
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    intercept = my - slope * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    return LineFit(slope, intercept, 1.0 if ss_tot == 0 else 1.0 - ss_res / ss_tot)


def scanned_seconds(summary: str) -> float | None:
    """The scan time from the CLI's summary line `scanned N groups in X.Ys (R groups/s)`."""
    for line in summary.splitlines():
        words = line.split()
        if len(words) >= 5 and words[0] == "scanned" and words[3] == "in" and words[4].endswith("s"):
            return float(words[4][:-1])
    return None


def app_id(driver_log: str) -> str | None:
    """The application's id from the driver's log (`... with app ID app-2026...`)."""
    for line in driver_log.splitlines():
        if "with app ID " in line:
            return line.rsplit("with app ID ", 1)[1].split()[0]
    return None


def task_window(executor_logs: Iterable[str]) -> float | None:
    """Seconds from the first task's start to the last task's end over the executors' logs (Spark's
    `yy/MM/dd HH:mm:ss` stamps, 1 s resolution): the job as the executors ran it, without the driver's work
    before its first task."""
    started, finished = [], []
    for text in executor_logs:
        for line in text.splitlines():
            if "INFO Executor: Running task" in line:
                started.append(datetime.strptime(line[:17], "%y/%m/%d %H:%M:%S"))
            elif "INFO Executor: Finished task" in line:
                finished.append(datetime.strptime(line[:17], "%y/%m/%d %H:%M:%S"))
    if not started or not finished:
        return None
    return (max(finished) - min(started)).total_seconds()


# ----- processes ----------------------------------------------------------------------------------------------


def load_average() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


class ZooKeepers:
    """`count` standalone ZooKeeper servers on loopback (the dev cluster's jars, config and JVM flags), with a
    bigger heap and sessions of up to 120 s (a writer holding a million ephemeral nodes must not expire)."""

    def __init__(self, root: Path, count: int) -> None:
        from migrator.devcluster import config, process
        from migrator.devcluster.jars import ensure_jars, require_java
        from migrator.devcluster.ports import free_port
        from migrator.devcluster.readiness import wait_zookeeper_ready

        self.root = root
        self.pids: list[int] = []
        self.ports = [free_port() for _ in range(count)]
        java, libs = require_java(), ensure_jars()
        with resources.as_file(resources.files("migrator.devcluster") / "log4j.properties") as src:
            shutil.copyfile(src, root / "log4j.properties")
        for i, port in enumerate(self.ports):
            data = root / f"zk{i}-data"
            data.mkdir()
            cfg = root / f"zoo{i}.cfg"
            cfg.write_text(config.zoo_cfg(port, data) + "maxSessionTimeout=120000\nsnapCount=1000000\n")
            cmd = config.jvm_command(java, libs, root / "log4j.properties", root / f"zk{i}.log", ZK_HEAP,
                                     config.ZK_MAIN, cfg)  # fmt: skip
            self.pids.append(process.spawn(cmd, root / f"zk{i}.out", root, tie_to_parent=True))
        try:
            for i, (pid, port) in enumerate(zip(self.pids, self.ports, strict=True)):
                wait_zookeeper_ready(port, lambda p=pid: process.is_alive(p), [root / f"zk{i}.out"], 120)
        except BaseException:
            self.stop()
            raise

    @property
    def connect_strings(self) -> list[str]:
        return [f"127.0.0.1:{port}" for port in self.ports]

    def rss_mib(self) -> list[int]:
        """Each server's resident memory (MiB), 0 for one that is gone."""
        out = []
        for pid in self.pids:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                out.append(0)
                continue
            kib = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
            out.append(kib // 1024)
        return out

    def stop(self) -> None:
        from migrator.devcluster import process

        process.terminate(self.pids, str(self.root), timeout=10)


class Writers:
    """One writer process per batch, each holding its groups (ephemeral members and owners) until stopped."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[str]] = []

    def write(self, batches: Sequence[Batch], zookeepers: Sequence[str]) -> float:
        """Write the batches in parallel; returns the seconds until every writer said READY."""
        started = time.monotonic()
        new = []
        for b in batches:
            cmd = [sys.executable, "-m", "benchmarks.fleet_scale", "--write", zookeepers[b.ensemble], "--write-groups",
                   str(b.groups), "--write-prefix", b.prefix, "--write-seed", str(b.seed)]  # fmt: skip
            new.append(subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        start_new_session=True))  # fmt: skip
        self.procs += new
        for proc in new:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            if line != "READY":
                raise RuntimeError(f"a fleet writer failed (exit {proc.poll()}): {line!r}")
        return time.monotonic() - started

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.procs)

    def stop(self) -> None:
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        for proc in self.procs:
            proc.wait(30)


def hold_fleet(zookeeper: str, groups: int, prefix: str, seed: int) -> int:
    """The writer process: write the groups, say READY, hold the session until stdin closes or a signal."""
    import migrator.ops  # noqa: F401  (kazoo compatibility shim)
    from migrator.fleet import synthetic
    from migrator.zk.client import connect

    zk = connect(zookeeper, session_timeout_s=SESSION_TIMEOUT_S)
    try:
        synthetic.make_fleet(zk, groups, prefix=prefix, seed=seed, now_ms=int(time.time() * 1000))
        print("READY", flush=True)
        sys.stdin.read()
        return 0
    finally:
        zk.stop()
        zk.close()


@dataclass(frozen=True, slots=True)
class ScanPoint:
    groups: int
    executors: int
    scan_s: float
    submit_s: float
    listed_s: float | None
    load_before: float
    load_after: float
    statuses: dict[str, int]
    statuses_expected: bool
    tasks_s: float | None = None
    """First task's start to last task's end on the executors (`task_window`)."""

    @property
    def startup_s(self) -> float:
        return self.submit_s - self.scan_s

    def as_dict(self) -> dict:
        return {
            "groups": self.groups,
            "executors": self.executors,
            "scan_s": round(self.scan_s, 2),
            "groups_per_s": round(self.groups / self.scan_s, 1),
            "startup_s": round(self.startup_s, 2),
            "submit_s": round(self.submit_s, 2),
            "listed_after_s": None if self.listed_s is None else round(self.listed_s, 2),
            "load_before": self.load_before,
            "load_after": self.load_after,
            "statuses": self.statuses,
            "statuses_expected": self.statuses_expected,
            "tasks_s": self.tasks_s,
            "tasks_groups_per_s": None if not self.tasks_s else round(self.groups / self.tasks_s, 1),
        }


def _timed_lines(stream: IO[str], started: float, into: list[tuple[float, str]], log: IO[str]) -> None:
    for line in stream:
        into.append((time.monotonic() - started, line.rstrip("\n")))
        log.write(line)


def submit_scan(spark: object, zookeepers: Sequence[str], batches: Sequence[Batch], executors: int, workdir: Path,
                expected: dict[str, int]) -> ScanPoint:  # fmt: skip
    """`spark-submit scripts/fleet_scan.py` over the batches' groups with `executors` one-core executors."""
    from tests.helpers.spark import BIN, spark_env

    groups = sum(b.groups for b in batches)
    out = workdir / f"scan-{groups}-{executors}"
    cmd = [str(BIN / "spark-submit"), "--master", spark.url,  # type: ignore[attr-defined]
           "--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.executor.memory=512m",
           "--conf", "spark.driver.memory=1g", "--total-executor-cores", str(executors),
           # executors register before the job starts, so the scan time holds no executor JVM start-up
           "--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0",
           "--conf", "spark.scheduler.maxRegisteredResourcesWaitingTime=300s",
           "scripts/fleet_scan.py", "--zookeeper", ";".join(zookeepers), "--include", include_regex(batches),
           "--stable-for", "0s", "--no-progress", "--output", str(out), "--format", "json",
           "--plan-file", str(out / "plan.json")]  # fmt: skip
    lines: list[tuple[float, str]] = []
    load_before = load_average()
    started = time.monotonic()
    with open(workdir / f"submit-{groups}-{executors}.log", "w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=spark_env(workdir / "spark"), start_new_session=True)  # fmt: skip
        assert proc.stdout is not None
        reader = threading.Thread(target=_timed_lines, args=(proc.stdout, started, lines, log), daemon=True)
        reader.start()
        try:
            code = proc.wait(SCAN_TIMEOUT_S)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
        reader.join(10)
    submit_s = time.monotonic() - started
    text = "\n".join(line for _, line in lines)
    scan_s = scanned_seconds(text)
    if code != 0 or scan_s is None:
        raise RuntimeError(f"spark-submit exited {code}:\n" + text[-3000:])
    rows = [json.loads(line) for line in (out / "fleet-scan.jsonl").read_text().splitlines()]
    statuses = dict(Counter(r["status"] for r in rows))
    listed = next((t for t, line in lines if line.endswith("ensemble(s)") and " groups in " in line), None)
    point = ScanPoint(groups, executors, scan_s, submit_s, listed, load_before, load_average(), statuses,
                      statuses == expected)  # fmt: skip
    return replace(point, tasks_s=executors_busy(workdir / "spark", text))


def executors_busy(spark_dir: Path, driver_log: str) -> float | None:
    """`task_window` of the application the driver log names, from the workers' executor logs."""
    app = app_id(driver_log)
    if app is None:
        return None
    return task_window(path.read_text(errors="replace") for path in spark_dir.glob(f"worker*/{app}/*/stderr"))


# ----- the run ---------------------------------------------------------------------------------------------


def summarise(points: Sequence[ScanPoint]) -> dict:
    """Per executor count the line over sizes; per size the 1-vs-2 ratio (scan time, one over two)."""
    out: dict = {"fit": {}, "ratio_1_to_2": {}}
    for executors in sorted({p.executors for p in points}):
        mine = sorted((p for p in points if p.executors == executors), key=lambda p: p.groups)
        if len({p.groups for p in mine}) >= 2:
            out["fit"][str(executors)] = _fit_of([p.groups for p in mine], [p.scan_s for p in mine])
            tasks = [p for p in mine if p.tasks_s]
            if len({p.groups for p in tasks}) >= 2:
                out["fit"][f"{executors}-tasks"] = _fit_of([p.groups for p in tasks], [p.tasks_s or 0.0 for p in tasks])
    for groups in sorted({p.groups for p in points}):
        by = {p.executors: p for p in points if p.groups == groups}
        if 1 in by and 2 in by:
            one, two = by[1], by[2]
            out["ratio_1_to_2"][str(groups)] = round(one.scan_s / two.scan_s, 2)
            if one.tasks_s and two.tasks_s:
                out["ratio_1_to_2"][f"{groups}-tasks"] = round(one.tasks_s / two.tasks_s, 2)
    return out


def _fit_of(groups: list[int], seconds: list[float]) -> dict:
    fit = linear_fit(groups, seconds)
    return {"seconds_per_1000_groups": round(fit.slope * 1000, 3), "fixed_s": round(fit.intercept, 2),
            "r2": round(fit.r2, 4)}  # fmt: skip


def run(sizes: Sequence[int], ensembles: int, workdir: Path, out: Path, executors: Sequence[int] = (1, 2)) -> dict:
    """Every size and executor count; `out` is rewritten after each point, so a run cut short keeps its points."""
    from tests.helpers.spark import SparkStandalone

    steps = plan_batches(sizes, ensembles, tag=f"fs{int(time.time()) % 100000}")
    result: dict = {"sizes": list(sizes), "ensembles": ensembles, "cpus": os.cpu_count(),
                    "python": platform.python_version(), "worker_cores": 1, "points": [], "writes": []}  # fmt: skip
    started = time.monotonic()
    zks = ZooKeepers(workdir, ensembles)
    writers = Writers()
    spark = None
    try:
        result["zookeeper_start_s"] = round(time.monotonic() - started, 1)
        t0 = time.monotonic()
        (workdir / "spark").mkdir()
        spark = SparkStandalone(workdir / "spark", workers=2)
        result["spark_cluster_start_s"] = round(time.monotonic() - t0, 1)
        done: list[Batch] = []
        for step, batches in enumerate(steps):
            write_s = writers.write(batches, zks.connect_strings)
            done += batches
            total = sum(b.groups for b in done)
            result["writes"].append({"groups": total, "added": sum(b.groups for b in batches),
                                     "write_s": round(write_s, 1), "load": load_average(),
                                     "zookeeper_rss_mib": zks.rss_mib()})  # fmt: skip
            print(f"{total} groups written ({write_s:.0f}s for this step)", flush=True)
            expected = expected_statuses(done)
            for count in executors if step % 2 == 0 else reversed(executors):
                point = submit_scan(spark, zks.connect_strings, done, count, workdir, expected)
                result["points"].append(point.as_dict())
                save(out, result)
                print(f"  {total} groups, {count} executor(s): scan {point.scan_s:.1f}s "
                      f"({total / point.scan_s:.0f} groups/s), start-up {point.startup_s:.1f}s, load "
                      f"{point.load_before}->{point.load_after}, statuses as expected: {point.statuses_expected}",
                      flush=True)  # fmt: skip
            if not writers.alive():
                raise RuntimeError("a fleet writer died: its ephemeral nodes are gone")
    finally:
        result.update(summarise([_point_of(p) for p in result["points"]]))
        save(out, result)
        if spark is not None:
            spark.stop()
        writers.stop()
        zks.stop()
    return result


def _point_of(d: dict) -> ScanPoint:
    return ScanPoint(d["groups"], d["executors"], d["scan_s"], d["submit_s"], d["listed_after_s"], d["load_before"],
                     d["load_after"], d["statuses"], d["statuses_expected"], d.get("tasks_s"))  # fmt: skip


@contextlib.contextmanager
def _workdir(keep: bool) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="migrator-fleet-scale-"))
    try:
        yield path
    finally:
        if keep:
            print(f"kept {path}")
        else:
            shutil.rmtree(path, ignore_errors=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", help="ascending group counts, comma-separated (default 25000,50000,100000)")
    parser.add_argument("--ensembles", type=int, default=4, help="standalone ZooKeeper servers (default 4)")
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}")
    parser.add_argument("--executors", default="1,2", help="one-core executor counts to compare (default 1,2)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, rows)")
    parser.add_argument("--write", metavar="ZOOKEEPER", help=argparse.SUPPRESS)  # the writer process
    parser.add_argument("--write-groups", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--write-prefix", help=argparse.SUPPRESS)
    parser.add_argument("--write-seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--reanalyse", nargs=2, metavar=("WORKDIR", "RESULT"),
                        help="add the executors' task windows of a --keep work directory to a result file")  # fmt: skip
    parser.add_argument("--replot", metavar="RESULT", help="only draw RESULT's PNG (beside it) from its JSON")
    args = parser.parse_args(argv)
    if args.replot:
        print(f"saved {plot(json.loads(Path(args.replot).read_text()), Path(args.replot).with_suffix('.png'))}")
        return 0
    if args.reanalyse:
        return reanalyse(Path(args.reanalyse[0]), Path(args.reanalyse[1]))
    signal.signal(signal.SIGTERM, _interrupt)  # a SIGTERM cleans up like Ctrl-C
    if args.write:
        return hold_fleet(args.write, args.write_groups, args.write_prefix, args.write_seed)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else list(QUICK_SIZES if args.quick else SIZES)
    suffix = "-quick" if args.quick else ""
    path = RESULTS / f"fleet_scale-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}{suffix}.json"
    with _workdir(args.keep) as workdir:
        result = run(sizes, args.ensembles, workdir, path, [int(n) for n in args.executors.split(",")])
    print(json.dumps({k: result[k] for k in ("fit", "ratio_1_to_2")}, indent=2))
    print(f"saved {path} and {plot(result, path.with_suffix('.png'))}")
    return 0 if all(p["statuses_expected"] for p in result["points"]) else 1


def reanalyse(workdir: Path, path: Path) -> int:
    """Fill in `tasks_s` of each point from the kept logs, and the summary again."""
    result = json.loads(path.read_text())
    points = []
    for d in result["points"]:
        log = (workdir / f"submit-{d['groups']}-{d['executors']}.log").read_text(errors="replace")
        point = replace(_point_of(d), tasks_s=executors_busy(workdir / "spark", log))
        points.append(point)
    result["points"] = [p.as_dict() for p in points]
    result.update(summarise(points))
    save(path, result)
    plot(result, path.with_suffix(".png"))
    print(json.dumps({k: result[k] for k in ("fit", "ratio_1_to_2")}, indent=2))
    return 0


def plot(result: dict, path: Path) -> Path:
    """Scan time (and the executors' task window) against groups, one line per executor count, with the
    least-squares lines; the load average before each point is printed beside it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for executors in sorted({p["executors"] for p in result["points"]}):
        mine = sorted((p for p in result["points"] if p["executors"] == executors), key=lambda p: p["groups"])
        xs = [p["groups"] for p in mine]
        line = ax.plot(xs, [p["scan_s"] for p in mine], marker="o", label=f"{executors} executor(s): scan")[0]
        ax.plot(xs, [p["tasks_s"] for p in mine], marker="x", linestyle=":", color=line.get_color(),
                label=f"{executors} executor(s): tasks")  # fmt: skip
        for p in mine:
            ax.annotate(f"load {p['load_before']:.0f}", (p["groups"], p["scan_s"]), fontsize=7,
                        textcoords="offset points", xytext=(4, 4))  # fmt: skip
    ax.set_xlabel(f"groups ({result['ensembles']} ensembles)")
    ax.set_ylabel("seconds")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_title(f"fleet-scan on Spark standalone, 1-core executors, {result['cpus']} cores shared", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def save(path: Path, result: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.exit(main())
