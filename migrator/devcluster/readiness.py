"""Wait until a dev-cluster process is really usable, or explain in one line why it is not.

"Port open" is not enough: a broker accepts connections before it has registered in ZooKeeper,
and a test that races that window sees phantom "no brokers" errors.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from migrator.devcluster.ports import HOST, accepts, four_letter_word
from migrator.errors import EnvironmentProblem

log = logging.getLogger(__name__)
POLL_S = 0.1


def wait_zookeeper_ready(port: int, alive: Callable[[], bool], logs: list[Path], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _check_alive("zookeeper", alive, logs)
        if four_letter_word(port, "ruok", timeout=1.0) == "imok" and "Mode:" in four_letter_word(port, "srvr"):
            return
        time.sleep(POLL_S)
    raise EnvironmentProblem(f"zookeeper on {HOST}:{port} not ready after {timeout:.0f}s: see {logs[-1]}")


def wait_broker_ready(
    zookeeper: str, broker_id: int, port: int, alive: Callable[[], bool], logs: list[Path], timeout: float
) -> None:
    from kazoo.exceptions import KazooException

    from migrator.zk.interrupts import InterruptSafeClient
    from migrator.zk.paths import BROKER_IDS

    name = f"broker-{broker_id}"
    deadline = time.monotonic() + timeout
    zk = InterruptSafeClient(hosts=zookeeper, timeout=10.0, logger=_quiet_logger())
    zk.start(timeout=max(1.0, min(10.0, timeout)))
    try:
        while time.monotonic() < deadline:
            _check_alive(name, alive, logs)
            try:
                registered = zk.exists(f"{BROKER_IDS}/{broker_id}") is not None
            except KazooException:  # a connection lost on a loaded host: kazoo reconnects, ask again
                registered = False
            if registered and accepts(port) and _metadata_ok(port, broker_id):
                return
            time.sleep(POLL_S)
    finally:
        zk.stop()
        zk.close()
    raise EnvironmentProblem(f"{name} on {HOST}:{port} not ready after {timeout:.0f}s: see {logs[-1]}")


def wait_broker_unregistered(zookeeper: str, broker_id: int, timeout: float) -> None:
    """Wait for a dead broker's ephemeral registration to expire, so the restarted one can register."""
    from migrator.zk.interrupts import InterruptSafeClient
    from migrator.zk.paths import BROKER_IDS

    zk = InterruptSafeClient(hosts=zookeeper, timeout=10.0, logger=_quiet_logger())
    zk.start(timeout=10.0)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and zk.exists(f"{BROKER_IDS}/{broker_id}"):
            time.sleep(POLL_S)
    finally:
        zk.stop()
        zk.close()


def _metadata_ok(port: int, broker_id: int) -> bool:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": f"{HOST}:{port}", "log_level": 0})
    try:
        md = admin.list_topics(timeout=2.0)
    except Exception as exc:  # KafkaException while the broker finishes starting
        log.debug("broker %s metadata not ready: %s", broker_id, exc)
        return False
    return broker_id in md.brokers and md.controller_id >= 0


def _check_alive(name: str, alive: Callable[[], bool], logs: list[Path]) -> None:
    if alive():
        return
    text = "\n".join(_read(p) for p in logs)
    if "Address already in use" in text or "BindException" in text:
        raise EnvironmentProblem(
            f"{name} could not bind its port (in use): stop the other process or run `migrator dev-cluster down`"
        )
    raise EnvironmentProblem(f"{name} exited during startup ({_last_error(text)}): see {logs[0]}")


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _last_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if "ERROR" in line or "Exception" in line]
    return (lines[-1] if lines else "no error logged")[:200]


def _quiet_logger() -> logging.Logger:
    """Kazoo logs every refused connection as a warning; while waiting for a restart that is noise."""
    quiet = logging.getLogger("migrator.devcluster.kazoo")
    quiet.setLevel(logging.ERROR)
    return quiet
