"""The `migrator` command as a user runs it (a subprocess), and what a refusal must leave untouched.

`run` can hide optional packages (`hide=("matplotlib",)`) the way a plain `pip install migrator` lacks
them: a `sitecustomize` on PYTHONPATH marks them absent in `sys.modules`, so both `import` and
`importlib.util.find_spec` see them missing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from migrator.kafka.admin import KafkaAdmin
from migrator.protocol.partition import TopicPartition

ROOT = Path(__file__).resolve().parents[2]
KAFKA_OWN = frozenset(
    [
        "/zookeeper",
        "/brokers",
        "/admin",
        "/config",
        "/controller",
        "/controller_epoch",
        "/cluster",
        "/feature",
        "/isr_change_notification",
        "/latest_producer_id_block",
        "/log_dir_event_notification",
    ]
)
"""What the broker itself writes at the root: it changes on its own, and no command may write there."""


@dataclass(frozen=True)
class CliRun:
    code: int
    stdout: str
    stderr: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("error:")]

    def single_error(self, code: int) -> str:
        """Assert the contract of a mistake: this exit code, one `error:` line, no traceback; return the line."""
        assert self.code == code, f"exit {self.code}, expected {code}\nstdout: {self.stdout}\nstderr: {self.stderr}"
        assert "Traceback" not in self.stderr + self.stdout, self.stderr
        assert len(self.error_lines) == 1, self.stderr
        return self.error_lines[0]


def _hiding_env(hide: Sequence[str], tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    if hide:
        site = tmp / "hide-optional"
        site.mkdir(parents=True, exist_ok=True)
        lines = ["import sys"] + [f"sys.modules[{name!r}] = None" for name in hide]
        (site / "sitecustomize.py").write_text("\n".join(lines) + "\n")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
    return env


def run(
    *args: str,
    hide: Sequence[str] = (),
    tmp: Path | None = None,
    timeout: float = 120,
    env: Mapping[str, str] | None = None,
) -> CliRun:
    """`migrator ARGS...` in its own interpreter, as an operator types it (`env`: extra environment variables)."""
    base = _hiding_env(hide, tmp or Path("/tmp")) if hide else dict(os.environ)
    env = {**base, **(env or {})}
    done = subprocess.run(
        [sys.executable, "-m", "migrator", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env
    )
    return CliRun(done.returncode, done.stdout, done.stderr)


def start(*args: str) -> subprocess.Popen[str]:
    """`migrator ARGS...` running in the background (for Ctrl-C tests)."""
    return subprocess.Popen(
        [sys.executable, "-m", "migrator", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
    )


class Background:
    """`migrator <args>` in a subprocess whose stdout lines are collected as they arrive."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "migrator", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        )  # fmt: skip
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def terminate(self, sig: int = signal.SIGTERM, timeout: float = 60) -> tuple[int, str]:
        """Send `sig`, wait for the exit; (exit code, all of stderr)."""
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=10)
        assert self.proc.stderr is not None
        return rc, self.proc.stderr.read()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def interrupt(proc: subprocess.Popen[str], timeout: float = 60) -> CliRun:
    """Ctrl-C, as a terminal sends it (SIGINT)."""
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=timeout)
    return CliRun(proc.returncode, out, err)


def _subtree(zk: KazooClient, paths: list[str], into: dict[str, tuple[bytes, int]]) -> None:
    """Every node under `paths` (themselves included): (data, last-modified zxid). A level's requests are sent
    together and answered in one round trip, so a large shared tree costs its depth, not its size, in round trips."""
    level = list(paths)
    while level:
        pending = [(node, zk.get_async(node), zk.get_children_async(node)) for node in level]
        level = []
        for node, data_request, children_request in pending:
            try:
                data, stat = data_request.get()
                children = children_request.get()
            except NoNodeError:
                continue
            into[node] = (data, stat.mzxid)
            level += [f"{node.rstrip('/')}/{child}" for child in children]


def zk_state(zk: KazooClient) -> dict[str, tuple[bytes, int]]:
    """Every node outside the broker's own (data, last-modified zxid): equal before and after = nothing written.

    The root's children are part of it, so a node created at a mistyped chroot shows too.
    """
    state: dict[str, tuple[bytes, int]] = {}
    _subtree(zk, [f"/{child}" for child in zk.get_children("/") if f"/{child}" not in KAFKA_OWN], state)
    return state


def group_state(zk: KazooClient, group: str, chroot: str = "") -> dict[str, object]:
    """What a command about `group` could write, cheaply: its subtree, and the children of the root, of the
    chroot and of its /consumers (a mistyped chroot or group created by mistake shows there)."""
    state: dict[str, object] = {}
    for parent in ("/", chroot or "/", f"{chroot}/consumers"):
        try:
            state[f"children {parent}"] = sorted(zk.get_children(parent))
        except NoNodeError:
            state[f"children {parent}"] = None
    subtree: dict[str, tuple[bytes, int]] = {}
    _subtree(zk, [f"{chroot}/consumers/{group}"], subtree)
    state.update(subtree)
    return state


def kafka_offsets(admin: KafkaAdmin, group: str, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
    return admin.committed_offsets(group, list(partitions))


def state_of(zk: KazooClient, admin: KafkaAdmin, group: str, topic: str, partitions: int) -> tuple[Any, Any]:
    """ZooKeeper as a whole plus the group's Kafka offsets: what a refused command must not change."""
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    return zk_state(zk), kafka_offsets(admin, group, tps)
