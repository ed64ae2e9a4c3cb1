"""A group member as its own process, for crash tests (`kill -9`), fault drills and clean stops (SIGTERM).

The parent side is `MemberProcess` (spawn, is it alive, how it died, SIGTERM, `kill -9`); the child is:

    python -m tests.helpers.member_proc --zookeeper Z --group G --topic T --streams N --consumer-id C \
        --log FILE [--property k=v ...] [--process-ms X]

Every processed record is appended to FILE as one JSONL line (`migrator.observe.records`), flushed at
once, with member `<consumerId>@<pid>` so a restarted member with the same consumer.id is told apart.
SIGTERM (or SIGINT) shuts the connector down cleanly (commit, release, deregister) and exits 0.
Prints `ready <consumerId>` once its streams exist. Its logs go to stderr: as an application that configures no
logging (WARNING and above), or from `--log-level` on with times.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STACK_DUMP_S = 1.0
"""How long a member that did not stop gets to write its threads' stacks (SIGUSR1) before it is killed."""
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from migrator import ConsumerConnector  # noqa: E402
from migrator.consumer.stream import KafkaStream  # noqa: E402
from migrator.observe import ProcessingLog  # noqa: E402


class MemberProcess:
    """The parent's handle on one member process: its stderr goes to `<log>.stderr`, so a member that dies
    (e.g. a librdkafka assertion's SIGABRT) is reported with its exit status and its last words."""

    def __init__(
        self,
        zookeeper: str,
        group: str,
        topic: str,
        consumer_id: str,
        log: Path,
        streams: int = 1,
        props: Mapping[str, str] | None = None,
        process_ms: float = 0.0,
        ready_timeout_s: float = 60.0,
        log_level: str | None = None,
    ) -> None:
        self.consumer_id = consumer_id
        self.log = log
        self.stderr_path = log.with_suffix(".stderr")
        cmd = [sys.executable, "-m", "tests.helpers.member_proc", "--zookeeper", zookeeper, "--group", group,
               "--topic", topic, "--streams", str(streams), "--consumer-id", consumer_id, "--log", str(log),
               "--process-ms", str(process_ms)]  # fmt: skip
        for key, value in (props or {}).items():
            cmd += ["--property", f"{key}={value}"]
        if log_level:
            cmd += ["--log-level", log_level]
        with open(self.stderr_path, "a", encoding="utf-8") as err:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True)
        ready = threading.Event()
        first: list[str] = []

        def read_first_line() -> None:
            first.append(self.proc.stdout.readline() if self.proc.stdout else "")
            ready.set()

        threading.Thread(target=read_first_line, daemon=True).start()
        if not ready.wait(ready_timeout_s) or not first[0].startswith("ready"):
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"member process {consumer_id} did not start: {self.death() or first!r}")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def poll(self) -> int | None:
        """As `subprocess.Popen.poll` (tests that only need the exit status treat this as a Popen)."""
        return self.proc.poll()

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def death(self) -> str | None:
        """None while it runs; else its exit status and the last lines it wrote to stderr."""
        code = self.proc.poll()
        if code is None:
            return None
        status = f"killed by signal {-code}" if code < 0 else f"exited {code}"
        lines = self.stderr_path.read_text(errors="replace").strip().splitlines()
        fatal = [i for i, line in enumerate(lines) if line.startswith("Fatal Python error")]
        tail = lines[fatal[-1] : fatal[-1] + 12] if fatal else lines[-3:]  # faulthandler's stacks of a crash
        return f"{self.consumer_id} (pid {self.pid}) {status}; stderr: {' | '.join(tail) or '(empty)'}"

    def stop(self, timeout_s: float = 60.0) -> int | None:
        """SIGTERM (a clean leave); the exit code, or None if it did not end within `timeout_s` (then its threads'
        stacks are dumped to its stderr file with SIGUSR1, and it is killed)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGUSR1)
            time.sleep(STACK_DUMP_S)
            self.kill()
            return None

    def kill(self) -> None:
        """`kill -9`, and reap it."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--zookeeper", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--streams", type=int, default=1)
    p.add_argument("--consumer-id", required=True)
    p.add_argument("--log", required=True, type=Path)
    p.add_argument("--property", action="append", default=[], metavar="K=V", help="extra consumer property")
    p.add_argument("--process-ms", type=float, default=0.0, help="sleep this long per record")
    p.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING"], help="log from this level on, with times")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    # A crash inside librdkafka (SIGSEGV, SIGABRT) then leaves every thread's Python stack in the stderr file,
    # and so does a member that does not stop (`MemberProcess.stop` sends SIGUSR1 before it kills).
    faulthandler.enable()
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    args = parse_args(argv)
    if args.log_level:  # timed lines, so a kept stderr file tells which fault preceded what the processing log shows
        logging.basicConfig(level=args.log_level, datefmt="%H:%M:%S",
                            format="%(asctime)s.%(msecs)03d %(threadName)s %(levelname)s %(message)s")  # fmt: skip
    props: dict[str, str] = {
        "zookeeper.connect": args.zookeeper,
        "group.id": args.group,
        "consumer.id": args.consumer_id,
        "auto.offset.reset": "smallest",
        "rebalance.backoff.ms": "400",
        "auto.commit.interval.ms": "1000",
        "zookeeper.session.timeout.ms": "4000",
    }
    for item in args.property:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"--property needs k=v, got {item!r}", file=sys.stderr)
            return 2
        props[key] = value
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    log = ProcessingLog(args.log)
    conn = ConsumerConnector(props)
    member = f"{conn.consumer_id}@{os.getpid()}"
    process_s = args.process_ms / 1000.0

    def drain(stream: KafkaStream) -> None:
        for m in stream:
            with log.processing(member, m.thread_id, m.topic, m.partition, m.offset):
                if process_s:
                    time.sleep(process_s)

    streams = conn.create_message_streams({args.topic: args.streams})[args.topic]
    threads = [threading.Thread(target=drain, args=(s,), daemon=True) for s in streams]
    for t in threads:
        t.start()
    print(f"ready {conn.consumer_id}", flush=True)
    while not stop.wait(0.2):
        pass
    conn.shutdown()
    for t in threads:
        t.join(timeout=10)
    log.close()
    print(f"stopped {conn.consumer_id}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
