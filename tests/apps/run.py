"""Running an app of tests/apps/ as its own process, the way a user runs a program."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.wait import wait_until

ROOT = Path(__file__).resolve().parents[2]


class App:
    """An app in a subprocess; its stdout lines are collected as they arrive, stderr kept for messages."""

    def __init__(self, script: str, *args: object) -> None:
        """`script` of tests/apps/, or `-m` to run a module (`App("-m", "migrator", "console-consumer", ...)`)."""
        argv = [*map(str, args)] if script == "-m" else [str(ROOT / "tests" / "apps" / script), *map(str, args)]
        self.proc = subprocess.Popen(
            [sys.executable, *(["-m"] if script == "-m" else []), *argv],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        )  # fmt: skip
        self.lines: list[str] = []
        self.errors: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.errors), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(pipe: object, into: list[str]) -> None:
        for line in pipe:  # type: ignore[attr-defined]
            into.append(line.rstrip("\n"))

    def line(self, prefix: str) -> str | None:
        """The first stdout line starting with `prefix`, if printed yet."""
        return next((line for line in self.lines if line.startswith(prefix)), None)

    @property
    def stderr(self) -> str:
        return "\n".join(self.errors)

    def signal(self, sig: int = signal.SIGTERM) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        rc = self.proc.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=5)
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture(name="apps")
def apps_fixture() -> Iterator[list[App]]:
    """`apps`: the apps still running when the test ends (even by failure) are killed. A test module
    imports `apps_fixture` to use it."""
    started: list[App] = []
    yield started
    for app in started:
        app.kill()


def start(apps: list[App], script: str, *args: object, ready: bool = True) -> App:
    """Start an app (see `App`) and, with `ready`, wait until it printed `ready`."""
    app = App(script, *args)
    apps.append(app)
    if ready:
        wait_until(lambda: app.line("ready") or app.proc.poll() is not None, 60, what=f"{script} ready")
        assert app.line("ready"), f"{script} did not start: {app.stderr}"
    return app
