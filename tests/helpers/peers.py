"""Group members as their own processes, ours and the real JVM peers, each logging what it processed.

- `ours`: `tests.helpers.member_proc`, an app on the public API (`from migrator import ConsumerConnector`),
  as a legacy connector or, with `bridge=True`, as a KIP-125 bridge;
- `scala`: the real Scala `ZookeeperConsumerConnector` of Kafka 1.1.1 (`jvm/OldConsumer.java`);
- `plain`: the real Java `KafkaConsumer` of kafka-clients 3.9.1 (`jvm/PlainConsumer.java`).

Every one appends each processed record to its own JSONL file in the format of `migrator.observe.records`,
so the independent observer judges all of them alike. The Java programs are compiled with the JDK's javac
once per user and version of their sources (`JvmPeers.compile`, under the project cache, the way the jars
are cached), against the jars in that cache: the test sessions of every xdist worker and run share them.
"""

from __future__ import annotations

import contextlib
import hashlib
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from migrator.demo.workload import bridge_props
from migrator.devcluster.config import FAST_START
from migrator.devcluster.paths import cache_root
from tests.helpers.cache import built_once
from tests.helpers.kafka import KafkaCluster
from tests.helpers.wait import wait_until

ROOT = Path(__file__).resolve().parents[2]
JVM_SOURCES = Path(__file__).resolve().parent / "jvm"
JVM_EXIT_ON_SIGTERM = 143
"""A JVM that ran its shutdown hooks after SIGTERM exits with 128 + 15."""
PATIENT = {"zookeeper.session.timeout.ms": "10000", "rebalance.max.retries": "10"}
"""For ours and the Scala members alike: these tests stop members cleanly and never wait for an expiry, so
the longest session the dev ZooKeeper allows and more rebalance attempts only keep a member alive (and
in its group) through the stalls of a loaded 2-core machine, where the broker's own registration can
flicker."""


def compiled_peers(old_libs: Path, kafka_libs: Path) -> Path:
    """The directory holding `OldConsumer/` and `PlainConsumer/` classes, compiled (under a file lock, both
    programs at once) the first time these sources meet these jars."""
    sources = sorted(JVM_SOURCES.glob("*.java"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources) + f"{old_libs}|{kafka_libs}".encode())
    out = cache_root() / f"jvm-peers-{digest.hexdigest()[:12]}"

    def compile_both() -> None:
        programs = {"OldConsumer": old_libs, "PlainConsumer": kafka_libs}
        javacs = {name: _javac(name, libs, out / name) for name, libs in programs.items()}
        for name, javac in javacs.items():
            _, stderr = javac.communicate(timeout=180)
            assert javac.returncode == 0, f"javac {name}.java failed:\n{stderr}"

    return built_once(out, ".compiled", compile_both)


def _javac(name: str, libs: Path, out: Path) -> subprocess.Popen[str]:
    out.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        ["javac", "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-nowarn", "-d", str(out), "-cp", f"{libs}/*",
         str(JVM_SOURCES / f"{name}.java"), str(JVM_SOURCES / "ProcessedLog.java")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class JvmPeers:
    """Classpaths of the compiled peer programs; `log4j` quiets the old client's logging into a file."""

    old_consumer_cp: str
    plain_consumer_cp: str
    log4j: Path
    workdir: Path

    @classmethod
    def compile(cls, old_libs: Path, kafka_libs: Path, workdir: Path) -> JvmPeers:
        classes = compiled_peers(old_libs, kafka_libs)
        log4j = workdir / "log4j.properties"
        with resources.as_file(resources.files("migrator.devcluster") / "log4j.properties") as src:
            log4j.write_bytes(src.read_bytes())
        return cls(
            old_consumer_cp=f"{old_libs}/*:{classes / 'OldConsumer'}",
            plain_consumer_cp=f"{kafka_libs}/*:{classes / 'PlainConsumer'}",
            log4j=log4j,
            workdir=workdir,
        )

    def jvm(self, classpath: str, log_file: Path) -> list[str]:
        """A small JVM: one of several members on a shared 2-core machine; warnings go to `log_file`."""
        return [
            "java",
            "-Xmx128m",
            *FAST_START,
            "-XX:+UseSerialGC",
            f"-Dlog4j.configuration=file:{self.log4j}",
            f"-Dmigrator.log.file={log_file}",
            "-cp",
            classpath,
        ]


class Peer:
    """One member process: its stdout lines are collected; `stop` is a clean leave (SIGTERM)."""

    def __init__(self, name: str, cmd: list[str], log: Path, clean_exit: int, stderr: Path) -> None:
        self.name, self.log, self.clean_exit = name, log, clean_exit
        self._stderr = stderr
        with open(stderr, "w") as err:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            wait_until(lambda: self._started(), 90, what=f"{name} ready")
        except BaseException:
            self.kill()  # not handed to anyone yet: nobody else would stop it
            raise

    def _started(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited {self.proc.returncode}: {self.stderr_tail()}")
        return any(line.startswith("ready") for line in self.lines)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def stderr_tail(self, n: int = 15) -> str:
        return "\n".join(self._stderr.read_text(errors="replace").splitlines()[-n:])

    def stop(self, timeout: float = 60) -> None:
        """Clean leave: the member commits what it processed, releases its partitions and deregisters."""
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=10)
        assert rc == self.clean_exit, f"{self.name} exited {rc} on SIGTERM: {self.stderr_tail()}"
        assert any(line.startswith("stopped") for line in self.lines), f"{self.name} did not shut down cleanly"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class Peers:
    """Starts members of one group on one topic, each with its own log in `tmp`; `close` kills leftovers."""

    def __init__(self, cluster: KafkaCluster, jvm: JvmPeers, group: str, topic: str, tmp: Path) -> None:
        self.cluster, self.jvm, self.group, self.topic, self.tmp = cluster, jvm, group, topic, tmp
        self.started: dict[str, Peer] = {}

    def cid(self, name: str) -> str:
        """The consumerId string a member registers under `ids` (and prefixes its owner threads with)."""
        return f"{self.group}_{name}"

    def log_of(self, name: str) -> Path:
        return self.tmp / f"{name}.jsonl"

    def _peer(self, name: str, cmd: list[str], clean_exit: int) -> Peer:
        assert name not in self.started or self.started[name].proc.poll() is not None, f"{name} is running"
        peer = Peer(name, cmd, self.log_of(name), clean_exit, self.tmp / f"{name}.stderr")
        self.started[name] = peer
        return peer

    def ours(self, name: str, streams: int = 1, bridge: bool = False, props: Mapping[str, str] | None = None) -> Peer:
        """Our connector in its own process (an app on the public API): legacy, or a bridge."""
        merged = {**PATIENT, **(bridge_props(self.cluster.bootstrap_servers) if bridge else {}), **(props or {})}
        cmd = [sys.executable, "-m", "tests.helpers.member_proc", "--zookeeper", self.cluster.zookeeper,
               "--group", self.group, "--topic", self.topic, "--streams", str(streams), "--consumer-id", name,
               "--log", str(self.log_of(name))]  # fmt: skip
        for key, value in merged.items():
            cmd += ["--property", f"{key}={value}"]
        return self._peer(name, cmd, 0)

    def scala(self, name: str, props: Mapping[str, str] | None = None) -> Peer:
        """The real Scala old consumer (Kafka 1.1.1) with one stream."""
        cmd = [*self.jvm.jvm(self.jvm.old_consumer_cp, self.tmp / f"{name}.log4j.log"), "OldConsumer",
               self.cluster.zookeeper, self.group, self.topic, name, str(self.log_of(name))]  # fmt: skip
        cmd += [f"{key}={value}" for key, value in {**PATIENT, **(props or {})}.items()]
        return self._peer(name, cmd, JVM_EXIT_ON_SIGTERM)

    def plain(self, name: str, props: Mapping[str, str] | None = None) -> Peer:
        """The real Java KafkaConsumer 3.9 with its default assignors; `client.id` is `name`."""
        cmd = [*self.jvm.jvm(self.jvm.plain_consumer_cp, self.tmp / f"{name}.log4j.log"), "PlainConsumer",
               self.cluster.bootstrap_servers, self.group, self.topic, name, str(self.log_of(name))]  # fmt: skip
        cmd += [f"{key}={value}" for key, value in (props or {}).items()]
        return self._peer(name, cmd, JVM_EXIT_ON_SIGTERM)

    def logs(self) -> list[Path]:
        return [p.log for p in self.started.values() if p.log.exists()]

    def close(self) -> None:
        for peer in self.started.values():
            with contextlib.suppress(Exception):
                peer.kill()
