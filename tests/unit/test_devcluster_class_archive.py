"""The dev cluster's class archives: used once installed, written otherwise, installed only when a JVM accepts it."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrator.devcluster import class_archive


def _java(tmp_path: Path, exit_code: int) -> str:
    """A stand-in `java` that answers every check with `exit_code` (unit tests start no JVM)."""
    java = tmp_path / "java"
    java.write_text(f"#!/bin/sh\nexit {exit_code}\n")
    java.chmod(0o755)
    return str(java)


def test_an_installed_archive_is_used_and_a_missing_one_is_written_at_exit(tmp_path: Path) -> None:
    archive, dumped = tmp_path / "a.jsa", tmp_path / "cluster" / "broker-1.jsa"
    assert class_archive.jvm_options(archive, dumped) == [f"-XX:ArchiveClassesAtExit={dumped}"]
    archive.write_bytes(b"x")
    assert class_archive.jvm_options(archive, dumped) == [f"-XX:SharedArchiveFile={archive}"]


def test_each_main_class_and_jar_set_has_its_own_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIGRATOR_CACHE_DIR", str(tmp_path / "cache"))
    java, libs = _java(tmp_path, 0), tmp_path / "libs"
    libs.mkdir()
    (libs / "kafka.jar").write_bytes(b"")
    broker = class_archive.archive_path(java, libs, "kafka.Kafka")
    assert broker.parent == tmp_path / "cache" / "class-archives"
    assert broker != class_archive.archive_path(java, libs, "org.apache.zookeeper.server.ZooKeeperServerMain")
    (libs / "other.jar").write_bytes(b"")
    assert broker != class_archive.archive_path(java, libs, "kafka.Kafka")


@pytest.mark.parametrize(("java_exit", "installed"), [(0, True), (134, False)])
def test_only_an_archive_a_jvm_accepts_is_installed(tmp_path: Path, java_exit: int, installed: bool) -> None:
    archive, dumped = tmp_path / "cache" / "a.jsa", tmp_path / "broker-1.jsa"
    dumped.write_bytes(b"archive")
    class_archive.install(_java(tmp_path, java_exit), tmp_path, archive, dumped)
    assert archive.exists() is installed
    assert not list(tmp_path.glob("cache/*.tmp")), "a staged copy was left behind"
