"""Start and stop the cluster's JVMs so that nothing outlives its owner by accident.

Each JVM runs in its own session (a terminal Ctrl-C goes to Python, which then downs the cluster in
order). When the owner is a Python process (tests, demo) the JVM also gets PR_SET_DEATHSIG, so that
even a SIGKILLed pytest takes its brokers with it. `migrator dev-cluster up` starts detached JVMs
instead: they must outlive the command that started them.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

PR_SET_DEATHSIG = 1


def _deathsig_preexec() -> Callable[[], None] | None:
    if not sys.platform.startswith("linux"):
        return None
    # PR_SET_DEATHSIG fires when the creating *thread* exits, so only use it from the main thread.
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return None

    def preexec() -> None:
        libc.prctl(PR_SET_DEATHSIG, signal.SIGKILL, 0, 0, 0)

    return preexec


def spawn(cmd: list[str], out_file: Path, cwd: Path, tie_to_parent: bool) -> int:
    """Start `cmd` in a new session with stdout/stderr appended to `out_file`; return its pid."""
    with open(out_file, "ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_deathsig_preexec() if tie_to_parent else None,
            close_fds=True,
        )
    _CHILDREN[proc.pid] = proc  # keeps the Popen so that its exit status is reaped, not a zombie
    return proc.pid


_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode("utf-8", errors="replace")


def is_alive(pid: int) -> bool:
    proc = _CHILDREN.get(pid)
    if proc is not None:
        return proc.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    status = _status(pid)
    return "State:\tZ" not in status


def is_ours(pid: int, marker: str) -> bool:
    """True when `pid` is alive and still the java process we started (its cmdline names our dir)."""
    if not is_alive(pid):
        return False
    line = cmdline(pid)
    return "java" in line and marker in line


def _status(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return ""


def peak_rss_kb(pid: int) -> int:
    """VmHWM (peak resident set) of a live process in KiB; 0 when unknown."""
    for line in _status(pid).splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def terminate(pids: list[int], marker: str, timeout: float = 10.0, kill: bool = False) -> None:
    """SIGTERM (or SIGKILL) our processes among `pids`, then SIGKILL whatever is left after `timeout`."""
    mine = [pid for pid in pids if is_ours(pid, marker)]
    sig = signal.SIGKILL if kill else signal.SIGTERM
    for pid in mine:
        _signal(pid, sig)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(is_alive(pid) for pid in mine):
        time.sleep(0.05)
    for pid in mine:
        if is_alive(pid) and marker in cmdline(pid):
            _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(is_alive(pid) for pid in mine):
        time.sleep(0.05)
    for pid in mine:
        proc = _CHILDREN.pop(pid, None)
        if proc is not None:
            proc.poll()


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
