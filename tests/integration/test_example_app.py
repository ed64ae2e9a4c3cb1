"""The programs of examples/, run unchanged as a user runs them: with examples/consumer.properties (only the
cluster's address and a fresh group substituted), as subprocesses, stopped by a signal."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from migrator import ConsumerConfig
from migrator.demo.workload import bridge_props
from tests.helpers.kafka import make_topic, produce
from tests.helpers.wait import wait_until

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
STOP_WITHIN_S = 10.0  # "within a few seconds" of docs/application.md


def example_properties(tmp_path: Path, zookeeper: str, group: str, **extra: str) -> Path:
    """examples/consumer.properties with this cluster's ZooKeeper, a fresh group, and `extra` appended."""
    lines = []
    for line in (EXAMPLES / "consumer.properties").read_text().splitlines():
        if line.startswith("zookeeper.connect="):
            line = f"zookeeper.connect={zookeeper}"
        elif line.startswith("group.id="):
            line = f"group.id={group}"
        lines.append(line)
    lines += [f"{key}={value}" for key, value in extra.items()]
    path = tmp_path / "consumer.properties"
    path.write_text("\n".join(lines) + "\n")
    ConsumerConfig.from_properties_file(path)  # the shipped file is valid as it stands
    return path


def run_example(
    script: str, *args: object, python: str = sys.executable, cwd: Path = ROOT
) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen([python, str(EXAMPLES / script), *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)  # fmt: skip
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        lines.extend(line.rstrip("\n") for line in proc.stdout)

    threading.Thread(target=read, daemon=True).start()
    return proc, lines


def stop(proc: subprocess.Popen[str], sig: int) -> float:
    """Send `sig`; how long the process took to exit (it must exit 0)."""
    sent = time.monotonic()
    proc.send_signal(sig)
    try:
        rc = proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"still running 60 s after {signal.Signals(sig).name}") from None
    took = time.monotonic() - sent
    assert rc == 0, proc.stderr.read() if proc.stderr else rc
    return took


@pytest.mark.parametrize(
    ("script", "second_run"),
    [("app.py", "bridge"), ("asyncio_app.py", "legacy")],
    ids=["threads", "asyncio"],
)
def test_the_example_stops_on_a_signal_and_processes_every_record_once_across_a_restart(
    cluster, unique_group, unique_topic, tmp_path, script, second_run
):
    """4 streams on 2 partitions (two streams never get a partition), default properties: SIGTERM stops the
    first run, SIGINT the second (for the threads example: the same program as a bridge), each within a
    few seconds; the second run continues exactly where the first stopped (the asyncio example commits
    from its tasks on the event loop every few records: no stall, no duplicate)."""
    topic = make_topic(cluster, unique_topic, partitions=2)
    legacy = example_properties(tmp_path, cluster.zookeeper, unique_group)
    produce(cluster, topic, [f"first {i}" for i in range(30)])
    first, lines = run_example(script, legacy, topic, 4)
    wait_until(lambda: len(lines) >= 30 or first.poll() is not None, 60, what="the first 30 records")
    first_stop = stop(first, signal.SIGTERM)
    produce(cluster, topic, [f"second {i}" for i in range(30)])
    props = legacy
    if second_run == "bridge":
        props = example_properties(tmp_path, cluster.zookeeper, unique_group, **bridge_props(cluster.bootstrap_servers))
    second, more = run_example(script, props, topic, 4)
    wait_until(lambda: len(more) >= 30 or second.poll() is not None, 60, what="the next 30 records")
    second_stop = stop(second, signal.SIGINT)
    print(f"\nexamples/{script} stop: legacy {first_stop:.2f}s (SIGTERM), {second_run} {second_stop:.2f}s (SIGINT)")
    assert first_stop < STOP_WITHIN_S and second_stop < STOP_WITHIN_S, (first_stop, second_stop)
    values = sorted(line.split(" ", 2)[2] for line in lines + more)
    assert values == sorted([f"first {i}" for i in range(30)] + [f"second {i}" for i in range(30)])


@pytest.mark.timeout(1500)  # building, a fresh virtualenv and installing every dependency from the index
def test_the_asyncio_example_runs_on_the_built_wheel_in_a_clean_virtualenv(
    cluster, unique_group, unique_topic, tmp_path
):
    """Installed the way the README says (`pip install -c constraints.txt <wheel>` into a fresh virtualenv,
    no repository on the path), the shipped asyncio example consumes and stops on SIGTERM."""
    wheels, env = tmp_path / "wheels", tmp_path / "venv"
    pip_quiet = ["--quiet", "--disable-pip-version-check"]
    build = [sys.executable, "-m", "pip", "wheel", *pip_quiet, "--no-deps", "-w", str(wheels), str(ROOT)]
    subprocess.run(build, check=True, cwd=tmp_path, timeout=600)
    (wheel,) = wheels.glob("migrator-*.whl")
    # without a pip of its own (ensurepip is slow): this test's pip installs into it (`--python`)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=600)
    python = str(env / "bin" / "python")
    install = [sys.executable, "-m", "pip", "--python", python, "install", *pip_quiet,
               "-c", str(ROOT / "constraints.txt"), str(wheel)]  # fmt: skip
    subprocess.run(install, check=True, cwd=tmp_path, timeout=600)
    where = subprocess.run([python, "-c", "import migrator; print(migrator.__file__)"], check=True,
                           cwd=tmp_path, capture_output=True, text=True, timeout=60).stdout  # fmt: skip
    assert where.startswith(str(env)), where
    topic = make_topic(cluster, unique_topic, partitions=2)
    produce(cluster, topic, [f"v{i}" for i in range(20)])
    props = example_properties(tmp_path, cluster.zookeeper, unique_group)
    proc, lines = run_example("asyncio_app.py", props, topic, 2, python=python, cwd=tmp_path)
    wait_until(lambda: len(lines) >= 20 or proc.poll() is not None, 60, what="20 records")
    took = stop(proc, signal.SIGTERM)
    print(f"\nexamples/asyncio_app.py from the wheel: stop {took:.2f}s")
    assert took < STOP_WITHIN_S
    assert sorted(line.split(" ", 2)[2] for line in lines) == sorted(f"v{i}" for i in range(20))
