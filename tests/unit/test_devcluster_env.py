"""Missing tools, busy ports and a missing Docker daemon give one clear line and exit 2."""

from __future__ import annotations

import socket
from dataclasses import replace
from pathlib import Path

import pytest

from migrator.cli.main import main
from migrator.devcluster import DevCluster, ports
from migrator.devcluster.jars import BROKER, COMPLETE_MARKER, OLD_CONSUMER, ensure_jars, ensure_old_consumer_jars
from migrator.errors import EXIT_REFUSED, EnvironmentProblem


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIGRATOR_CACHE_DIR", str(tmp_path / "cache"))


def test_missing_java_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EnvironmentProblem, match=r"java not found.*JDK 17"):
        DevCluster.start()


def test_missing_maven_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EnvironmentProblem, match=r"mvn not found.*Maven"):
        ensure_jars()


def test_missing_maven_is_named_for_the_old_consumer_jars(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EnvironmentProblem, match=r"mvn not found.*Maven"):
        ensure_old_consumer_jars()


def test_fetch_prints_the_broker_and_the_old_consumer_directories(capsys: pytest.CaptureFixture[str]) -> None:
    """Every jar set is fetched by the one command CI runs before the tests; each has its own directory."""
    old_broker = replace(BROKER, version="2.8.2")
    for jars, jar in ((BROKER, "kafka_2.13-3.9.1.jar"), (OLD_CONSUMER, "kafka_2.12-1.1.1.jar"),
                      (old_broker, "kafka_2.13-2.8.2.jar")):  # fmt: skip
        target = jars.target()
        target.mkdir(parents=True)
        (target / jar).touch()
        (target / COMPLETE_MARKER).touch()
    assert main(["dev-cluster", "fetch"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        str(BROKER.target()),
        str(OLD_CONSUMER.target()),
        str(old_broker.target()),
    ]
    assert BROKER.target().parent.name == "kafka-3.9.1"  # the broker's cache directory did not move


def test_busy_port_is_named() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert not ports.is_port_free(port)
        with pytest.raises(EnvironmentProblem, match=f"port 127\\.0\\.0\\.1:{port} for zookeeper is in use"):
            ports.ensure_port_free(port, "zookeeper")


def test_free_port_avoids_the_ephemeral_range() -> None:
    low, _ = ports._ephemeral_range()
    port = ports.free_port()
    assert ports.is_port_free(port)
    assert low <= 21000 or port < low


def test_docker_backend_refuses_without_a_daemon(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    docker = pytest.importorskip("docker")

    def no_daemon(*args: object, **kwargs: object) -> object:
        raise docker.errors.DockerException("Error while fetching server API version")

    monkeypatch.setattr(docker, "from_env", no_daemon)
    assert main(["dev-cluster", "up", "--backend", "docker", "--name", "unit-docker"]) == EXIT_REFUSED
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no Docker daemon answers" in err[0]


def test_env_of_unknown_cluster_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dev-cluster", "env", "--name", "never-started"]) == EXIT_REFUSED
    assert "no dev cluster named 'never-started'" in capsys.readouterr().err


def test_bad_cluster_name_is_refused() -> None:
    with pytest.raises(Exception, match="cluster name"):
        DevCluster.start(name="../etc")
