"""Shutdown and logs while ZooKeeper or Kafka is unreachable, on the user's path.

Each member is its own process: the console consumer, or an application written on the public API
(`tests.helpers.member_proc`, whose SIGTERM handler calls `ConsumerConnector.shutdown()`). A shutdown must end
within about the connect timeout (`--connect-timeout`, or `zookeeper.connection.timeout.ms` and
`offsets.channel.socket.timeout.ms`) plus a few seconds, say what it gave up on, and the logs of an outage must
stay a few dozen lines that say what is down: no raw librdkafka lines, no floods.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.kafka import make_topic
from tests.helpers.wait import wait_until
from tests.helpers.zk import zk_client as open_zk

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
UNREACHABLE = "127.0.0.1:1"  # nothing listens there: connections are refused at once, for good
TIMEOUT_S = 3  # the connect timeouts the members are given
GRACE_S = 3  # what shutdown may add to the longer connect timeout (migrator.connector)
SLACK_S = 7  # process start-up and exit on a loaded 2-core machine
RAW_LIBRDKAFKA = re.compile(r"^%\d\|")  # librdkafka's own stderr format, which must no longer appear
MAX_LINES_PER_MINUTE = 36  # "a few dozen lines at most" during a 60 s outage


def _signal_and_time(proc: subprocess.Popen[str], sig: int) -> tuple[int, float]:
    began = time.monotonic()
    proc.send_signal(sig)
    try:
        rc = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"no exit within 120 s of {sig.name}") from None
    return rc, time.monotonic() - began


def _raw_librdkafka(lines: list[str]) -> list[str]:
    return [line for line in lines if RAW_LIBRDKAFKA.match(line)]


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait()


def _app(zookeeper: str, group: str, topic: str, log: Path, bootstrap: str, **props: str) -> subprocess.Popen[str]:
    """A bridge written on the public API, in its own process; stderr (its logs) goes to `<log>.stderr`."""
    props = {
        "coordination.migration.enabled": "true",
        "coordination.migration.bootstrap.servers": bootstrap,
        "offsets.channel.socket.timeout.ms": str(TIMEOUT_S * 1000),
        "zookeeper.connection.timeout.ms": str(TIMEOUT_S * 1000),
        "zookeeper.session.timeout.ms": "6000",
        **props,
    }
    cmd = [sys.executable, "-m", "tests.helpers.member_proc", "--zookeeper", zookeeper, "--group", group,
           "--topic", topic, "--streams", "2", "--consumer-id", "app", "--log", str(log)]  # fmt: skip
    for key, value in props.items():
        cmd += ["--property", f"{key}={value}"]
    with log.with_suffix(".stderr").open("w") as stderr:
        return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr, text=True)


def _ready(proc: subprocess.Popen[str]) -> None:
    line = proc.stdout.readline() if proc.stdout else ""  # a bridge waits up to 15 s to join Kafka first
    assert line.startswith("ready"), f"the application did not start: {line!r}"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_console_bridge_without_kafka_stops_within_the_connect_timeout(
    cluster: Any,
    unique_group: str,
    unique_topic: str,
    sig: signal.Signals,
    tmp_path: Path,
    procs: list[subprocess.Popen[str]],
) -> None:
    """Before: Ctrl-C took 56 s and the log still said `within 10s` with `--connect-timeout 5`."""
    make_topic(cluster, unique_topic, 2)
    err = tmp_path / "console.stderr"
    with err.open("w") as stderr_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "migrator", "console-consumer", "-z", cluster.zookeeper, "-g", unique_group,
             "-t", unique_topic, "--migration", "-b", UNREACHABLE, "--connect-timeout", str(TIMEOUT_S)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr_file, text=True,
        )  # fmt: skip
    procs.append(proc)
    # Signal once the bridge is up and waiting for Kafka (its embedded member has reported the brokers down).
    wait_until(lambda: "Kafka coordination unavailable" in err.read_text(), 60, interval=0.2,
               what="the bridge to report Kafka unavailable")  # fmt: skip
    rc, took = _signal_and_time(proc, sig)
    stderr = err.read_text().splitlines()
    print(f"{sig.name}: exit {rc} after {took:.1f}s; {len(stderr)} stderr lines")
    assert rc == 0, "\n".join(stderr)
    assert took <= TIMEOUT_S + GRACE_S + SLACK_S, f"{sig.name} took {took:.1f}s"
    assert not _raw_librdkafka(stderr), stderr[:5]
    assert len(stderr) <= MAX_LINES_PER_MINUTE, "\n".join(stderr)


def test_application_through_a_minute_without_kafka_then_sigterm(
    cluster: Any, unique_group: str, unique_topic: str, tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    """A bridge whose brokers cannot be reached for a minute writes a few dozen lines that say so, and
    shutdown() (from its SIGTERM handler) ends within the connect timeout plus a few seconds."""
    make_topic(cluster, unique_topic, 2)
    log = tmp_path / "app.jsonl"
    began = time.monotonic()
    proc = _app(cluster.zookeeper, unique_group, unique_topic, log, UNREACHABLE)
    procs.append(proc)
    _ready(proc)
    while time.monotonic() - began < 60:
        assert proc.poll() is None, log.with_suffix(".stderr").read_text()
        time.sleep(1)
    rc, took = _signal_and_time(proc, signal.SIGTERM)
    stderr = log.with_suffix(".stderr").read_text().splitlines()
    print(f"a minute without Kafka: {len(stderr)} stderr lines; SIGTERM exit {rc} after {took:.1f}s")
    assert rc == 0, "\n".join(stderr)
    assert took <= TIMEOUT_S + GRACE_S + SLACK_S, f"SIGTERM took {took:.1f}s"
    assert not _raw_librdkafka(stderr), stderr[:5]
    assert len(stderr) <= MAX_LINES_PER_MINUTE, "\n".join(stderr)
    assert any("Kafka coordination unavailable" in line for line in stderr), "\n".join(stderr)


def test_application_sigterm_with_zookeeper_gone_for_good(
    cluster_factory: Any, unique_group: str, unique_topic: str, tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    """Before: bridges ignored SIGTERM for minutes, kazoo's stop joining a watch callback retrying forever."""
    own = cluster_factory(brokers=1)
    make_topic(own, unique_topic, 4)
    log = tmp_path / "app.jsonl"
    proc = _app(own.zookeeper, unique_group, unique_topic, log, own.bootstrap_servers)
    procs.append(proc)
    _ready(proc)
    paths = f"/consumers/{unique_group}/owners/{unique_topic}"
    with open_zk(own) as zk:
        wait_until(lambda: len(zk.get_children(paths)) == 4 if zk.exists(paths) else False, 60,
                   what="the application owns every partition")  # fmt: skip
    own.stop_process("zookeeper")
    time.sleep(3 * TIMEOUT_S)  # past the session timeout: the client retries a server that is gone
    rc, took = _signal_and_time(proc, signal.SIGTERM)
    stderr = log.with_suffix(".stderr").read_text().splitlines()
    print(f"ZooKeeper gone: SIGTERM exit {rc} after {took:.1f}s; {len(stderr)} stderr lines")
    assert rc == 0, "\n".join(stderr)
    assert took <= TIMEOUT_S + GRACE_S + SLACK_S, f"SIGTERM took {took:.1f}s:\n" + "\n".join(stderr)
    assert any("gave up" in line for line in stderr), "\n".join(stderr)
