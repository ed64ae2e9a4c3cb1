"""A Spark standalone cluster on loopback, started from the pyspark installation as an operator would:
`spark-class org.apache.spark.deploy.master.Master` and `...worker.Worker`, 1 GiB per worker and one core by
default (the machine has 2 cores). `in_background` starts it while the caller sets up other things; `stop` ends
exactly the processes it started."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import urllib.request
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pyspark

from migrator.devcluster.ports import free_port
from tests.helpers.wait import wait_until

SPARK_HOME = Path(pyspark.__file__).resolve().parent
"""pip's pyspark is a whole Spark (bin/, jars/). Its scripts find it through `python3`, which need not be
the interpreter that has pyspark, so SPARK_HOME is set explicitly."""
BIN = SPARK_HOME / "bin"
START_TIMEOUT_S = 240.0
"""A daemon's JVM start alone took two minutes while the suite's first clusters started beside it on 2 cores."""
STOP_GRACE_S = 5.0
LEAN_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
"""JVM options for Spark's short-lived JVMs on a shared 2-core machine: the client compiler only and the serial
collector halve the CPU a master and a worker take to start and register (about 25 s to 12 s)."""


def spark_env(workdir: Path) -> dict[str, str]:
    """Loopback only, small and lean daemons (and `spark-class`'s launcher JVM), logs in `workdir`."""
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": LEAN_JVM,
        "SPARK_LAUNCHER_OPTS": LEAN_JVM,
        "SPARK_LOG_DIR": str(workdir),
        "SPARK_WORKER_DIR": str(workdir / "work"),
    }


class SparkStandalone:
    def __init__(self, workdir: Path, workers: int = 2, cores: int = 1) -> None:
        self.workdir = workdir
        self.cores = cores
        self.port, self.ui_port = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.names: list[str] = []
        try:
            self._start(workers)
        except BaseException:
            self.stop()  # a daemon that did not come up in time must not outlive the test
            raise

    @classmethod
    def in_background(cls, workdir: Path, workers: int = 2, cores: int = 1) -> Future[SparkStandalone]:
        """Start it on a thread of its own; `.result()` is the started cluster (or the start's failure)."""
        pool = ThreadPoolExecutor(1, thread_name_prefix="spark-standalone")
        try:
            return pool.submit(cls, workdir, workers, cores)
        finally:
            pool.shutdown(wait=False)

    def _start(self, workers: int) -> None:
        """The master, then the workers, each waited for up to `START_TIMEOUT_S`."""
        self._launch("master", "org.apache.spark.deploy.master.Master",
                     "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui_port))  # fmt: skip
        wait_until(lambda: self._alive() and self.state().get("status") == "ALIVE", START_TIMEOUT_S, interval=0.5,
                   what="spark master alive")  # fmt: skip
        for i in range(workers):
            self._launch(f"worker{i}", "org.apache.spark.deploy.worker.Worker",
                         "--host", "127.0.0.1", "--cores", str(self.cores), "--memory", "1g", "--webui-port", "0",
                         "--work-dir", str(self.work_dir(i)), self.url)  # fmt: skip
        wait_until(lambda: self._alive() and self.state().get("aliveworkers") == workers, START_TIMEOUT_S,
                   interval=0.5, what="spark workers registered")  # fmt: skip

    def _alive(self) -> bool:
        """Fail at once, with the log, when a daemon exited."""
        for proc, name in zip(self.procs, self.names, strict=True):
            if proc.poll() is not None:
                log = (self.workdir / f"{name}.log").read_text(errors="replace")
                raise AssertionError(f"spark {name} exited {proc.returncode}:\n{log[-2000:]}")
        return True

    def _launch(self, name: str, main: str, *args: str) -> None:
        with open(self.workdir / f"{name}.log", "wb") as out:
            proc = subprocess.Popen([str(BIN / "spark-class"), main, *args], stdout=out, stderr=subprocess.STDOUT,
                                    env=spark_env(self.workdir), start_new_session=True)  # fmt: skip
        self.procs.append(proc)
        self.names.append(name)

    def work_dir(self, worker: int) -> Path:
        return self.workdir / f"worker{worker}"

    def state(self) -> dict:
        """The master's own JSON view (its web UI's /json/): status, alive workers, applications."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as resp:
                return json.load(resp)
        except OSError:
            return {}

    def stop(self) -> None:
        """SIGTERM to each process group it started (spark-class execs one JVM per group), SIGKILL to what is
        left after `STOP_GRACE_S` (nothing they hold outlives the test's directory); a second call leaves the
        groups already reaped alone."""
        for proc in reversed(self.procs):
            if proc.returncode is not None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
