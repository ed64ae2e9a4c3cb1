"""State files, stale-cluster cleanup and the rule that we only signal processes we started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from migrator.devcluster import process, state
from tests.helpers.wait import wait_until


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIGRATOR_CACHE_DIR", str(tmp_path / "cache"))


def _state(tmp_path: Path, name: str = "t", pid: int = 0) -> state.ClusterState:
    cluster_dir = tmp_path / f"migrator-{name}-x"
    cluster_dir.mkdir()
    return state.ClusterState(
        name=name,
        cluster_dir=str(cluster_dir),
        libs="/libs",
        owner_pid=0,
        processes=[
            state.ProcessState(name="zookeeper", port=2181, config="zoo.cfg", pid=pid),
            state.ProcessState(name="broker-1", port=9092, config="b.properties", broker_id=1),
        ],
    )


def test_state_round_trips(tmp_path: Path) -> None:
    st = _state(tmp_path)
    state.save(st)
    assert state.load("t") == st
    assert state.names() == ["t"]
    assert st.zookeeper_port == 2181


def test_torn_state_file_counts_as_absent(tmp_path: Path) -> None:
    path = state.state_path("t")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert state.load("t") is None


def test_stale_cluster_is_swept_with_its_directory(tmp_path: Path) -> None:
    st = _state(tmp_path, pid=2**22 + 12345)  # no such pid
    state.save(st)
    assert state.sweep_stale() == ["t"]
    assert state.load("t") is None
    assert not Path(st.cluster_dir).exists()


def _fake_java(marker: str) -> subprocess.Popen[bytes]:
    # argv mentions "java" and the marker, like the JVMs we start
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "java", marker])
    # until exec has replaced the forked copy of our own argv
    wait_until(lambda: marker in process.cmdline(proc.pid), 5, interval=0.01, what=f"{marker} in the argv")
    return proc


def test_terminate_signals_only_processes_carrying_our_marker(tmp_path: Path) -> None:
    ours, foreign = _fake_java(str(tmp_path)), _fake_java("/somewhere/else")
    try:
        assert process.is_ours(ours.pid, str(tmp_path))
        assert not process.is_ours(foreign.pid, str(tmp_path))
        process.terminate([ours.pid, foreign.pid], str(tmp_path), timeout=5)
        assert ours.wait(timeout=5) is not None
        assert foreign.poll() is None
    finally:
        for proc in (ours, foreign):
            proc.kill()
            proc.wait()


def test_live_cluster_is_not_swept(tmp_path: Path) -> None:
    proc = _fake_java(str(tmp_path / "migrator-t-x"))
    try:
        st = _state(tmp_path, pid=proc.pid)
        state.save(st)
        assert st.alive_pids() == [proc.pid]
        assert state.sweep_stale() == []
        assert state.load("t") is not None
    finally:
        proc.kill()
        proc.wait()
