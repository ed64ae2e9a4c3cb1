"""Interrupts and connect timeouts of the operator commands, as a shell delivers them, against the real cluster."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.recipe.watchers import DataWatch

from migrator.errors import EXIT_FAILED, EXIT_INTERRUPTED
from tests.helpers import cli
from tests.helpers.fake_group import FakeGroup

ROOT = Path(__file__).resolve().parents[2]


def _twice_when_written(zk: KazooClient, path: str, value: str, proc: subprocess.Popen[str]) -> threading.Event:
    """When `path` holds `value`: SIGINT to `proc`, then to its process group, as `timeout -s INT` does."""
    sent = threading.Event()

    def on_data(data: bytes | None, _stat: Any, _event: Any = None) -> bool:
        if data == value.encode() and not sent.is_set():
            sent.set()
            threading.Thread(target=twice, daemon=True).start()
        return not sent.is_set()

    def twice() -> None:
        time.sleep(0.5)  # into the wait
        os.kill(proc.pid, signal.SIGINT)
        time.sleep(0.02)  # the second lands while the first is being handled
        os.killpg(proc.pid, signal.SIGINT)

    DataWatch(zk, path, on_data)
    return sent


def test_set_mode_wait_given_two_interrupts_still_says_the_mode_is_written(
    cluster: Any, zk_client: KazooClient, fake_group: FakeGroup
) -> None:
    bridge = fake_group.add_bridge(f"{fake_group.group}_b1")
    fake_group.wait_kafka_members({bridge})
    for target in ("kafka", "zookeeper"):  # a lost message showed in 5 of 6 such rounds
        argv = ["set-mode", target, "-z", cluster.zookeeper, "-g", fake_group.group, "--wait"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "migrator", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            start_new_session=True,  # its own process group, as under `timeout`
        )
        sent = _twice_when_written(zk_client, fake_group.paths.mode, target, proc)
        out, err = proc.communicate(timeout=60)
        assert sent.is_set(), f"the mode was never written: {err}"
        line = cli.CliRun(proc.returncode, out, err).single_error(EXIT_INTERRUPTED)
        assert f"the mode of {fake_group.group} IS written ({target}" in line


@pytest.fixture
def silent_listener() -> Iterator[str]:
    """A port that accepts connections and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield f"127.0.0.1:{server.getsockname()[1]}"


@pytest.fixture(scope="module")
def start_up_s() -> float:
    """How long a command takes to start and exit on this (loaded) machine, the baseline of the bound below."""
    started = time.monotonic()
    cli.run("get-mode", "--help")
    return time.monotonic() - started


@pytest.mark.parametrize("where", ["a Kafka port", "a silent listener"])
def test_connect_timeout_is_honoured_against_a_listener_that_is_not_zookeeper(
    cluster: Any, silent_listener: str, start_up_s: float, where: str
) -> None:
    """The session timeout (10 s) used to bound the attempt in flight: `--connect-timeout 1` took 10 s."""
    target = cluster.bootstrap_servers.split(",")[0] if where == "a Kafka port" else silent_listener
    started = time.monotonic()
    done = cli.run("get-mode", "-z", target, "-g", "g", "--connect-timeout", "1")
    beyond_start_up = time.monotonic() - started - start_up_s
    assert "did not answer within 1s" in done.single_error(EXIT_FAILED)
    assert beyond_start_up < 6, f"{beyond_start_up:.1f}s beyond start-up: the connect timeout was not the bound"
