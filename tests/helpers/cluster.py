"""The cluster handle tests receive: a DevCluster, or an external cluster named by env variables."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from migrator.devcluster.ports import four_letter_word
from migrator.errors import EnvironmentProblem

ENV_ZOOKEEPER = "MIGRATOR_TEST_ZOOKEEPER"
ENV_BOOTSTRAP = "MIGRATOR_TEST_BOOTSTRAP"


@dataclass
class ExternalCluster:
    """A cluster someone else runs; tests that need to stop processes are skipped on it."""

    zookeeper: str
    bootstrap_servers: str
    process_names: list[str] = field(default_factory=list)
    name: str = "external"

    def mntr(self) -> dict[str, str]:
        host, _, port = self.zookeeper.split(",")[0].rpartition(":")
        if host not in ("127.0.0.1", "localhost"):
            pytest.skip("mntr is only read from a loopback ZooKeeper")
        text = four_letter_word(int(port), "mntr")
        return dict(line.split("\t", 1) for line in text.splitlines() if "\t" in line)

    def stop_process(self, name: str, kill: bool = False) -> None:
        pytest.skip("needs a dev cluster whose processes the test controls (use cluster_factory)")

    def start_process(self, name: str) -> None:
        pytest.skip("needs a dev cluster whose processes the test controls (use cluster_factory)")

    def down(self) -> None:
        """Not ours to stop."""


def external_from_env() -> ExternalCluster | None:
    zookeeper, bootstrap = os.environ.get(ENV_ZOOKEEPER), os.environ.get(ENV_BOOTSTRAP)
    if not zookeeper and not bootstrap:
        return None
    if not (zookeeper and bootstrap):
        raise pytest.UsageError(f"set both {ENV_ZOOKEEPER} and {ENV_BOOTSTRAP} to use an external cluster")
    return ExternalCluster(zookeeper=zookeeper, bootstrap_servers=bootstrap)


def restart_process(cluster: Any, process: str, attempts: int = 3, pause_s: float = 2.0) -> list[str]:
    """Start a stopped dev-cluster process again; return the failed attempts that came first.

    On a loaded host a restarted broker's JVM can exit during startup with a ZooKeeper error (the dev
    cluster's broker sessions are only 6 s). That is the test environment's problem, not the bridges': the
    caller reports it (with the end of the process's output) and the process is started again, as an
    operator would."""
    failures: list[str] = []
    for attempt in range(1, attempts + 1):
        try:
            cluster.start_process(process)
            return failures
        except EnvironmentProblem as exc:
            lines: list[str] = []
            for log in (cluster.cluster_dir / f"{process}.out", cluster.cluster_dir / f"{process}.log"):
                if log.exists():
                    lines += [x for x in log.read_text(errors="replace").splitlines() if "ERROR" in x or "FATAL" in x]
            failures.append(f"{process} attempt {attempt}: {exc}; its errors: {' | '.join(lines[-3:])[:600]}")
            if attempt == attempts:
                raise EnvironmentProblem("; ".join(failures)) from exc
            time.sleep(pause_s)
    return failures
