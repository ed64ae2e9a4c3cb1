"""Things the tests build once per user under the project cache (`~/.cache/migrator`), the way the jars are
fetched once: the pykafka peer venv, the compiled JVM peers."""

from __future__ import annotations

import fcntl
from collections.abc import Callable
from pathlib import Path


def built_once(target: Path, marker: str, build: Callable[[], None]) -> Path:
    """`target`, after `build()` has filled it unless `target/marker` says an earlier build finished; builds
    run under a file lock, so xdist workers and concurrent runs wait for one build instead of racing."""
    done = target / marker
    if done.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            build()
            done.touch()
    return target
