"""The state file of a running dev cluster, so that another process can attach to it or down it.

`~/.cache/migrator/clusters/<name>/state.json` records what `down` needs and nothing it must guess:
pids, ports, and the cluster directory whose path appears in every command line we started.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from migrator.devcluster import process
from migrator.devcluster.paths import cluster_state_dir, clusters_dir

STATE_FILE = "state.json"


@dataclass
class ProcessState:
    name: str  # "zookeeper", "zookeeper-<myid>" (an ensemble) or "broker-<id>"
    port: int
    config: str
    pid: int = 0
    broker_id: int | None = None
    advertised_port: int = 0  # a broker behind a proxy: what clients connect to (0: `port`)

    @property
    def client_port(self) -> int:
        return self.advertised_port or self.port


@dataclass
class ClusterState:
    name: str
    cluster_dir: str
    libs: str
    backend: str = "local"
    owner_pid: int = 0
    detached: bool = False
    processes: list[ProcessState] = field(default_factory=list)
    containers: list[str] = field(default_factory=list)

    @property
    def zookeeper_port(self) -> int:
        """The first ZooKeeper server's client port."""
        return self.zookeeper_ports[0]

    @property
    def zookeeper_ports(self) -> list[int]:
        return [p.port for p in self.processes if p.broker_id is None]

    def process(self, name: str) -> ProcessState:
        for proc in self.processes:
            if proc.name == name:
                return proc
        raise KeyError(name)

    def alive_pids(self) -> list[int]:
        return [p.pid for p in self.processes if p.pid and process.is_ours(p.pid, self.cluster_dir)]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ClusterState:
        raw = json.loads(text)
        procs = [ProcessState(**p) for p in raw.pop("processes", [])]
        return cls(processes=procs, **raw)


def state_path(name: str) -> Path:
    return cluster_state_dir(name) / STATE_FILE


def save(state: ClusterState) -> None:
    path = state_path(state.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(state.to_json())
    os.replace(tmp, path)


def load(name: str) -> ClusterState | None:
    try:
        return ClusterState.from_json(state_path(name).read_text())
    except FileNotFoundError:
        return None
    except (ValueError, TypeError, KeyError):
        return None  # a torn or foreign file: treated as no cluster


def remove(state: ClusterState, forget_name: bool = True) -> None:
    """Forget a cluster: its temp dir, its state file and (unless its lock is held) its state dir."""
    if state.cluster_dir and Path(state.cluster_dir).name.startswith("migrator-"):
        shutil.rmtree(state.cluster_dir, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        state_path(state.name).unlink()
    if forget_name:
        shutil.rmtree(cluster_state_dir(state.name), ignore_errors=True)


@contextlib.contextmanager
def name_lock(name: str) -> Iterator[None]:
    """Serialises `up`/`down` of one name across processes."""
    directory = cluster_state_dir(name)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def names() -> list[str]:
    root = clusters_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / STATE_FILE).exists())


def sweep_stale() -> list[str]:
    """Remove every local cluster whose processes are all gone (a crashed owner); return their names."""
    _sweep_leftover_dirs()
    cleaned = []
    for name in names():
        state = load(name)
        if state is None or state.backend != "local":
            continue
        if not state.detached and state.owner_pid > 0 and process.is_alive(state.owner_pid):
            continue  # its owner may restart a process it stopped on purpose
        if not state.alive_pids():
            remove(state)
            cleaned.append(name)
    return cleaned


def _sweep_leftover_dirs(min_age_s: float = 600.0) -> None:
    """Drop state dirs holding only an old lock file (left by an interrupted `up`)."""
    root = clusters_dir()
    if not root.is_dir():
        return
    now = time.time()
    for directory in root.iterdir():
        lock = directory / "lock"
        if (directory / STATE_FILE).exists() or not lock.exists():
            continue
        with contextlib.suppress(OSError):
            if now - lock.stat().st_mtime > min_age_s:
                shutil.rmtree(directory, ignore_errors=True)
