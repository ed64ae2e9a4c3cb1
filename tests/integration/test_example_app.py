"""examples/app.py, the program docs/application.md explains, run as a user runs it."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.helpers.kafka import make_topic, produce
from tests.helpers.wait import wait_until

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def run_example(path: Path, topic: str) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen([sys.executable, str(ROOT / "examples" / "app.py"), str(path), topic],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)  # fmt: skip
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        lines.extend(line.rstrip("\n") for line in proc.stdout)

    threading.Thread(target=read, daemon=True).start()
    return proc, lines


def test_the_example_processes_every_record_once_across_a_restart(cluster, unique_group, unique_topic, tmp_path):
    topic = make_topic(cluster, unique_topic, partitions=3)
    path = tmp_path / "consumer.properties"
    path.write_text(
        f"zookeeper.connect={cluster.zookeeper}\ngroup.id={unique_group}\nauto.offset.reset=smallest\n"
        "consumer.timeout.ms=500\n"
    )
    produce(cluster, topic, [f"first {i}" for i in range(30)])
    first, lines = run_example(path, topic)
    wait_until(lambda: len(lines) >= 30 or first.poll() is not None, 60, what="the first 30 records")
    first.send_signal(signal.SIGTERM)
    assert first.wait(30) == 0, first.stderr.read() if first.stderr else ""
    produce(cluster, topic, [f"second {i}" for i in range(30)])
    second, more = run_example(path, topic)
    wait_until(lambda: len(more) >= 30 or second.poll() is not None, 60, what="the next 30 records")
    second.send_signal(signal.SIGINT)
    assert second.wait(30) == 0
    values = sorted(line.split(" ", 2)[2] for line in lines + more)
    assert values == sorted([f"first {i}" for i in range(30)] + [f"second {i}" for i in range(30)])
