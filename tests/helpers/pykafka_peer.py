"""Real pykafka 2.8.0 peers: their interpreter, consumer processes, and an oracle of its assignors.

pykafka 2.8.0 pins kazoo==2.5.0 while migrator needs kazoo>=2.10, so pykafka cannot live in `.venv`. It gets
its own venv, built once per user from `tests/peers/pykafka-requirements.txt` under the project cache
(`~/.cache/migrator/pykafka-<hash>`), the way the jars are cached. Everything pykafka runs in those processes:

- `PykafkaMember`: `tests/peers/pykafka_member.py`, a `BalancedConsumer` (or a managed one) logging each processed
  record as JSONL for the observer;
- `PykafkaOracle`: `tests/peers/pykafka_oracle.py`, which answers with pykafka's own `decide_partitions`.

`ConfluentMember` (`tests/peers/confluent_member.py`, in `.venv`) is the plain confluent-kafka consumer a team
moves to instead of managed pykafka.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from migrator.devcluster.paths import cache_root
from tests.helpers.cache import built_once
from tests.helpers.member_proc import MemberProcess

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "tests" / "peers"
REQUIREMENTS = PEERS / "pykafka-requirements.txt"


def pykafka_python() -> Path:
    """The interpreter of the pykafka peer venv, created (under a file lock) on first use."""
    stamp = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:12]
    venv = cache_root() / f"pykafka-{stamp}"
    python = venv / "bin" / "python"

    def install() -> None:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=300)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS)],
                       check=True, timeout=600)  # fmt: skip

    built_once(venv, ".installed", install)
    return python


class PeerProcess(MemberProcess):
    """The parent's handle on one peer consumer process that prints `ready <consumer id>` once started (stderr
    in `<log>.stderr`): stopped (SIGTERM), killed and asked how it died like any member process."""

    def __init__(self, cmd: list[str], log: Path, ready_timeout_s: float = 60.0) -> None:
        self.log = log
        self.stderr_path = log.with_suffix(".stderr")
        with open(self.stderr_path, "a", encoding="utf-8") as err:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True)
        first: list[str] = []
        ready = threading.Event()

        def read_first_line() -> None:
            first.append(self.proc.stdout.readline() if self.proc.stdout else "")
            ready.set()

        threading.Thread(target=read_first_line, daemon=True).start()
        if not ready.wait(ready_timeout_s) or not first[0].startswith("ready "):
            self.kill()
            tail = self.stderr_path.read_text(errors="replace").strip().splitlines()[-5:]
            raise AssertionError(f"peer {cmd[1]} did not start: {first!r}; stderr: {' | '.join(tail)}")
        self.consumer_id = first[0].split(" ", 1)[1].strip()


class PykafkaMember(PeerProcess):
    """A pykafka consumer process: `BalancedConsumer`, or with `managed` a `ManagedBalancedConsumer`."""

    def __init__(
        self,
        zookeeper: str,
        bootstrap: str,
        group: str,
        topic: str,
        log: Path,
        protocol: str = "range",
        managed: bool = False,
        process_ms: float = 0.0,
        ready_timeout_s: float = 60.0,
    ) -> None:
        cmd = [str(pykafka_python()), str(PEERS / "pykafka_member.py"), "--zookeeper", zookeeper,
               "--bootstrap", bootstrap, "--group", group, "--topic", topic, "--log", str(log),
               "--protocol", protocol, "--process-ms", str(process_ms)]  # fmt: skip
        if managed:
            cmd.append("--managed")
        super().__init__(cmd, log, ready_timeout_s)


class ConfluentMember(PeerProcess):
    """A plain confluent-kafka consumer process (`tests/peers/confluent_member.py`), client.id `name`."""

    def __init__(
        self, bootstrap: str, group: str, topic: str, name: str, log: Path, strategy: str = "range",
        instance_id: str = "",
    ) -> None:  # fmt: skip
        cmd = [sys.executable, str(PEERS / "confluent_member.py"), "--bootstrap", bootstrap, "--group", group,
               "--topic", topic, "--name", name, "--log", str(log), "--strategy", strategy,
               "--instance-id", instance_id]  # fmt: skip
        super().__init__(cmd, log)


class PykafkaOracle:
    """pykafka's own assignors in a child process: one JSON request per line, one answer per line."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [str(pykafka_python()), str(PEERS / "pykafka_oracle.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip

    def decide(
        self,
        protocol: str,
        topic: str,
        python2_names: bool,
        participants: Sequence[str],
        leaders: Mapping[int, int],
    ) -> dict[int, str]:
        """partition -> consumer id, as each participant's own `decide_partitions` call decides it."""
        request = {"protocol": protocol, "topic": topic, "python2_names": python2_names,
                   "participants": list(participants), "leaders": {str(p): b for p, b in leaders.items()}}  # fmt: skip
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        return {int(p): cid for p, cid in answer.items()}

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(10)
