"""`migrator dev-cluster up --zookeepers 3 --kafka-version 1.1.1`, driven as a user types it: a real
3-server ensemble of the old broker's ZooKeeper (3.4.10) under a Kafka 1.1.1 broker, and `down` ends it."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest
from kazoo.client import KazooClient

from migrator.devcluster.ports import four_letter_word
from migrator.zk.paths import BROKER_IDS

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrator", "dev-cluster", *args], capture_output=True, text=True, timeout=240
    )


def test_cli_up_an_ensemble_under_an_old_broker(request: pytest.FixtureRequest) -> None:
    name = f"ens-{uuid.uuid4().hex[:8]}"
    request.addfinalizer(lambda: _cli("down", "--name", name))
    up = _cli("up", "--name", name, "--zookeepers", "3", "--kafka-version", "1.1.1")
    assert up.returncode == 0, up.stderr
    env = dict(line.split("=", 1) for line in up.stdout.splitlines() if "=" in line)
    servers = env["ZOOKEEPER"].split(",")
    assert len(servers) == 3, env

    status = _cli("status").stdout
    assert all(f"zookeeper-{i}" in status for i in (1, 2, 3)), status
    answers = [four_letter_word(int(s.rpartition(":")[2]), "srvr") for s in servers]
    modes = sorted(line.split(":", 1)[1].strip() for a in answers for line in a.splitlines() if "Mode:" in line)
    assert modes == ["follower", "follower", "leader"], answers  # one quorum, not three standalone servers
    assert all("3.4.10" in a for a in answers), answers  # the ZooKeeper Kafka 1.1.1 was released with

    zk = KazooClient(hosts=env["ZOOKEEPER"])
    zk.start(timeout=30)
    try:
        assert zk.get_children(BROKER_IDS) == ["1"]
    finally:
        zk.stop()
        zk.close()
    assert _cli("down", "--name", name).returncode == 0
    assert all(four_letter_word(int(s.rpartition(":")[2]), "ruok") == "" for s in servers)


def test_cli_up_refuses_an_unknown_kafka_version() -> None:
    bad = _cli("up", "--name", f"bad-{uuid.uuid4().hex[:8]}", "--kafka-version", "0.8.2")
    assert bad.returncode == 2
    assert bad.stderr.startswith("error:") and "--kafka-version" in bad.stderr, bad.stderr
