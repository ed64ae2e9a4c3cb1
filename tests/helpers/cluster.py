"""The cluster handle tests receive: a DevCluster, or an external cluster named by env variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest

from migrator.devcluster.ports import four_letter_word

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
