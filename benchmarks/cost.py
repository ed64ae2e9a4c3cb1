"""What a member costs to run: CPU and memory of a bridge, a legacy connector and a plain consumer.

Each member runs alone in its own group, in its own process, on the same 16-partition topic, consuming the
same stream and doing the same work: one JSON line per record written to a pipe (its stdout, read and
counted by this process). The bridge runs in mode `kafka` with 4 streams, the legacy connector with 4
streams, the plain consumer is a confluent-kafka `poll(1.0)` loop. All three run side by side, so the
machine's load at the moment weighs on them alike: figures are ratios to the plain consumer.

Per load (~20 records/s "idle", 800 and 4,000 records/s), after a warm-up, over one window: CPU % of a core
and CPU µs per record (the run time of the member's threads from /proc/<pid>/task/*/schedstat, see
`cpu_seconds`), RSS (VmRSS from /proc/<pid>/status) at the window's end, and per thread role
(`thread_role`) CPU and wake-ups per second, which show where an idle member's time goes.

    python -m benchmarks.cost [--quick] [-z ZK -b BROKERS] [--profile] [--compare CHECKOUT]

`--profile` also records py-spy flame graphs of the bridge over the idle and the busiest window
(`results/cost-bridge-<load>.svg`); py-spy must be installed (the `dev` extra). `--compare` runs the bridge
and legacy connector of another checkout (another revision's `migrator`) in the same window, so a change is
judged against its own baseline under the same load. `--one-stream` adds each connector with one stream, and
`--split-plain` a plain application of 4 threads, each polling its own client on a quarter of the partitions:
what 4 application threads cost without any connector.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from benchmarks.common import RESULTS, ROOT, Cluster, add_cluster_args, cluster, ratio, save, unique
from migrator.demo.group import create_topic
from migrator.demo.workload import QUIET_LOGGER, quiet_libraries
from migrator.kafka.admin import KafkaAdmin
from migrator.zk.client import connect

PARTITIONS = 16
STREAMS = 4  # a connector's streams (application threads), as `cost_member.STREAMS`
KINDS = ("plain", "bridge", "legacy")
LOADS = (("idle", 20.0), ("800", 800.0), ("4000", 4000.0))
CLK_TCK = os.sysconf("SC_CLK_TCK")


# -- the parent --------------------------------------------------------------------------------------------
class Member:
    """One member's process, its stdout counted line by line."""

    def __init__(self, kind: str, c: Cluster, topic: str, wrap: Sequence[str] = (), exit_after_s: float = 0,
                 tree: Path | None = None, streams: int | None = None) -> None:  # fmt: skip
        """`tree`: run the `migrator` of that checkout (another revision) instead of this one's; `streams`: a
        connector's streams, or a plain application's threads, each with its own client (labelled kind/N when
        not the default: `STREAMS` for a connector, 1 for a plain consumer)."""
        default = 1 if kind == "plain" else STREAMS
        streams = streams or default
        label = kind if streams == default else f"{kind}/{streams}"
        self.kind = label if tree is None else f"{label}@{tree.name}"
        self.group = unique(f"cost-{kind}")
        cmd = [sys.executable, str(ROOT / "benchmarks" / "cost_member.py"), kind, c.zookeeper, c.bootstrap_servers,
               self.group, topic, "--exit-after", str(exit_after_s), "--streams", str(streams)]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(tree or ROOT)}  # ahead of the editable install of this checkout
        self.process = subprocess.Popen([*wrap, *cmd], cwd=ROOT, stdout=subprocess.PIPE, env=env)
        self.lines = 0
        assert self.process.stdout is not None
        self._reader = threading.Thread(target=self._count, args=(self.process.stdout,), daemon=True)
        self._reader.start()

    def _count(self, out: IO[bytes]) -> None:
        while chunk := out.read1(1 << 16):  # type: ignore[attr-defined]
            self.lines += chunk.count(b"\n")

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=5)


def cpu_seconds(pid: int) -> float:
    """CPU seconds of a process's live threads, from /proc/<pid>/task/*/schedstat (nanoseconds); utime + stime
    from /proc/<pid>/stat where schedstat is missing. utime and stime count whole 10 ms ticks, sampled: an idle
    member spends a few ticks a second, so over a window they resolve its CPU to ~0.05% of a core, about the
    margin of the goal. A thread that ends within the window is not counted (members keep theirs)."""
    total, found = 0, False
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
                found = True
    if found:
        return total / 1e9
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15, counted after the command name


def thread_role(comm: str) -> str:
    """What a thread of a member is, from its OS name (`cost_member` names Python threads after their
    Python names): `drain` for a stream's application thread, `zk_loop` for kazoo's, `fetcher`, `embedded`,
    `rebalance` for the connector's, librdkafka's own (`rdk:...`) as they are, `main` for the main thread."""
    if "(" in comm:
        return comm[comm.index("(") + 1 :].rstrip(")")
    if comm.startswith(("rdk:", "python")):
        return "main" if comm.startswith("python") else comm
    return comm.split("-", 1)[0]


def thread_usage(pid: int) -> dict[str, tuple[float, int]]:
    """Per role (`thread_role`): CPU seconds and voluntary context switches (wake-ups after a wait) of the
    process's live threads."""
    usage: dict[str, tuple[float, int]] = {}
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                task = Path(f"/proc/{pid}/task/{tid}")
                role = thread_role(task.joinpath("comm").read_text().strip())
                cpu = int(task.joinpath("schedstat").read_text().split()[0]) / 1e9
                status = task.joinpath("status").read_text()
                wakes = int(status.split("voluntary_ctxt_switches:")[1].split()[0])
                cpu0, wakes0 = usage.get(role, (0.0, 0))
                usage[role] = (cpu0 + cpu, wakes0 + wakes)
    return usage


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


@dataclass(frozen=True)
class Sample:
    kind: str
    load: str
    cpu_percent: float
    records: int
    us_per_record: float | None
    rss_mib: float
    threads: dict[str, tuple[float, float]]  # per role: CPU % of a core, wake-ups per second


def measure(members: list[Member], load: str, window_s: float) -> list[Sample]:
    """CPU and records of every member over the same window, sampled side by side."""
    before = [(cpu_seconds(m.pid), m.lines, thread_usage(m.pid)) for m in members]
    time.sleep(window_s)
    after = [(cpu_seconds(m.pid), m.lines, thread_usage(m.pid)) for m in members]
    samples = []
    for m, (cpu0, n0, t0), (cpu1, n1, t1) in zip(members, before, after, strict=True):
        cpu, n = cpu1 - cpu0, n1 - n0
        per = round(cpu / n * 1e6, 1) if n else None
        threads = {role: (round(100 * (c - t0.get(role, (0.0, 0))[0]) / window_s, 3),
                          round((w - t0.get(role, (0.0, w))[1]) / window_s, 1))
                   for role, (c, w) in sorted(t1.items())}  # fmt: skip
        samples.append(Sample(m.kind, load, round(100 * cpu / window_s, 2), n, per, round(rss_mib(m.pid), 1), threads))
    return samples


def to_kafka_mode(c: Cluster, group: str, timeout_s: float = 90.0) -> None:
    """Switch the bridge's group to mode kafka, as an operator does (preflight included)."""
    from migrator.errors import RefusedError
    from migrator.ops import modes
    from migrator.protocol.codecs import Mode

    zk = connect(c.zookeeper)
    admin = KafkaAdmin(c.bootstrap_servers, {"logger": logging.getLogger(QUIET_LOGGER)})
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                modes.set_mode(zk, group, Mode.KAFKA, admin=admin, reason="benchmarks.cost", who="benchmark")
                return
            except RefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        zk.stop()
        zk.close()


class Producer:
    """`rate` records/s spread over the partitions in round robin, in ticks of `TICK_S`. It does not wait for
    acknowledgements: the cost of the consumers is measured, not the delivery of every record."""

    TICK_S = 0.005

    def __init__(self, bootstrap: str, topic: str, rate: float) -> None:
        from confluent_kafka import Producer as KafkaProducer

        self._producer = KafkaProducer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                                        "logger": logging.getLogger(QUIET_LOGGER)})  # fmt: skip
        self._topic, self._rate = topic, rate
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cost-producer", daemon=True)
        self.sent = 0

    def _run(self) -> None:
        started = time.monotonic()
        while not self._stop.wait(self.TICK_S):
            due = int((time.monotonic() - started) * self._rate)
            while self.sent < due:
                try:
                    self._producer.produce(self._topic, f"seq-{self.sent}".encode(), partition=self.sent % PARTITIONS)
                except BufferError:
                    break  # the broker is behind: catch up at the next tick
                self.sent += 1
            self._producer.poll(0)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._producer.flush(10)


@contextlib.contextmanager
def producing(c: Cluster, topic: str, rate: float) -> Iterator[Producer]:
    producer = Producer(c.bootstrap_servers, topic, rate)
    producer.start()
    try:
        yield producer
    finally:
        producer.stop()


def wait_consuming(members: list[Member], timeout_s: float = 120.0) -> None:
    """Until every member has processed a record and goes on doing so."""
    deadline = time.monotonic() + timeout_s
    marks = [m.lines for m in members]
    while time.monotonic() < deadline:
        time.sleep(1.0)
        if all(m.lines > mark for m, mark in zip(members, marks, strict=True)):
            return
    idle = [m.kind for m, mark in zip(members, marks, strict=True) if m.lines <= mark]
    raise RuntimeError(f"members not consuming: {idle}")


def py_spy_exe() -> str | None:
    exe = shutil.which("py-spy") or str(ROOT / ".venv" / "bin" / "py-spy")
    return exe if os.path.exists(exe) else None


def profile_bridge(c: Cluster, load: str, rate: float, seconds: float) -> None:
    """A flame graph of a bridge (mode kafka) consuming at `rate`: py-spy starts the bridge's process (it may
    not attach to a process it did not start here) and samples it until the process exits after `seconds`.
    Start-up (imports, joining, the switch) is in the graph too, under `<module>` and `create_message_streams`;
    the steady part is everything under the stream, worker, fetcher and embedded-member threads."""
    exe = py_spy_exe()
    if exe is None:
        print("py-spy not installed (pip install -e '.[dev]'): no flame graph", flush=True)
        return
    svg = RESULTS / f"cost-bridge-{load}.svg"
    topic = fresh_topic(c)
    wrap = [exe, "record", "--rate", "100", "--threads", "--nonblocking", "--output", str(svg), "--"]
    with producing(c, topic, rate):
        bridge = Member("bridge", c, topic, wrap=wrap, exit_after_s=seconds)
        wait_consuming([bridge])
        to_kafka_mode(c, bridge.group)
        bridge.process.wait(timeout=seconds + 120)
    print(f"saved {svg}", flush=True)


def fresh_topic(c: Cluster) -> str:
    """A new topic of `PARTITIONS` partitions: a member joining it has no backlog to catch up on."""
    topic = unique("cost")
    zk = connect(c.zookeeper)
    admin = KafkaAdmin(c.bootstrap_servers, {"logger": logging.getLogger(QUIET_LOGGER)})
    create_topic(admin, zk, topic, PARTITIONS)
    zk.stop()
    zk.close()
    return topic


def run(c: Cluster, quick: bool = False, profile: bool = False, compare: Sequence[Path] = (),
        loads: Sequence[str] = (), kinds: Sequence[str] = KINDS, window_s: float | None = None,
        name: str | None = None, one_stream: bool = False, split_plain: bool = False) -> dict[str, object]:  # fmt: skip
    """Every kind of `kinds` (and each `compare` checkout's connectors) side by side at each of `loads` (all by
    default); `name`: the results file (default `cost` or `cost-quick`)."""
    quiet_libraries()
    warmup_s, default_window_s = (4.0, 15.0) if quick else (8.0, 30.0)
    window_s = window_s or default_window_s
    chosen = [(load, rate) for load, rate in LOADS if not loads or load in loads]
    topic = fresh_topic(c)
    members = [Member(kind, c, topic) for kind in KINDS if kind in kinds or kind == "plain"]
    for tree in compare:
        members += [Member(kind, c, topic, tree=tree) for kind in KINDS[1:] if kind in kinds]
    if one_stream:  # what the hand-over between threads costs: the same connector with one stream
        members += [Member(kind, c, topic, streams=1) for kind in KINDS[1:] if kind in kinds]
    if split_plain:  # what one client per stream could cost at best: a plain application built that way
        members.append(Member("plain", c, topic, streams=STREAMS))
    samples: list[Sample] = []
    try:
        with producing(c, topic, LOADS[0][1]):
            wait_consuming(members)
            for m in members:
                if m.kind.startswith("bridge"):
                    to_kafka_mode(c, m.group)
        for load, rate in chosen:
            with producing(c, topic, rate):
                time.sleep(warmup_s)
                samples += measure(members, load, window_s)
            for s in samples[-len(members) :]:
                print(f"{s.load:>5} {s.kind:<7} cpu {s.cpu_percent:6.2f}%  {s.us_per_record} us/record  "
                      f"{s.records / window_s:.0f} records/s  rss {s.rss_mib} MiB", flush=True)  # fmt: skip
                print("      " + "  ".join(f"{role} {cpu}% {wakes}/s" for role, (cpu, wakes) in s.threads.items()
                                           if cpu >= 0.01), flush=True)  # fmt: skip
    finally:
        for m in members:
            m.stop()
    if profile:
        for load, rate in (LOADS[0], LOADS[-1]):
            profile_bridge(c, load, rate, 3 * window_s)
    doc = {"quick": quick, "window_s": window_s, "load_average": os.getloadavg(),
           "samples": [asdict(s) for s in samples], "ratios": ratios(samples)}  # fmt: skip
    for key, figures in doc["ratios"].items():  # type: ignore[attr-defined]
        print(f"{key:<12} " + "  ".join(f"{name} {value}x" for name, value in figures.items()), flush=True)
    print(f"saved {save(name or ('cost-quick' if quick else 'cost'), doc)}", flush=True)
    return doc


def ratios(samples: list[Sample]) -> dict[str, dict[str, float | None]]:
    """Each connector's figures as ratios to the plain consumer's in the same window."""
    out: dict[str, dict[str, float | None]] = {}
    for load, _rate in LOADS:
        by_kind = {s.kind: s for s in samples if s.load == load}
        plain = by_kind.get("plain")
        if plain is None:
            continue
        for kind, s in by_kind.items():
            if kind == "plain":
                continue
            out[f"{kind} {load}"] = {
                "cpu": ratio(s.cpu_percent, plain.cpu_percent),
                "us_per_record": ratio(s.us_per_record, plain.us_per_record),
                "rss": ratio(s.rss_mib, plain.rss_mib),
            }
    return out


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cluster_args(parser)
    parser.add_argument("--profile", action="store_true", help="py-spy flame graphs of the bridge per load")
    parser.add_argument("--compare", type=Path, metavar="CHECKOUT", action="append", default=[],
                        help="also run the bridge and legacy connector of another checkout (e.g. `git worktree add "
                        "/tmp/main main`) side by side, labelled kind@<its directory name>; repeatable")  # fmt: skip
    parser.add_argument("--loads", type=_names, default=(), help="only these loads, e.g. idle,4000")
    parser.add_argument("--kinds", type=_names, default=KINDS, help="only these connectors, e.g. bridge (plain always)")
    parser.add_argument("--window", type=float, help="seconds per window (default 30, 15 with --quick)")
    parser.add_argument("--name", help="results file name (default cost, cost-quick with --quick)")
    parser.add_argument("--one-stream", action="store_true", help="also each connector with 1 stream (kind/1)")
    parser.add_argument("--split-plain", action="store_true",
                        help=f"also a plain application of {STREAMS} threads, each polling its own client on a "
                        f"share of the partitions (plain/{STREAMS})")  # fmt: skip
    args = parser.parse_args(argv)
    with cluster(args.zookeeper, args.bootstrap_servers) as c:
        run(c, quick=args.quick, profile=args.profile, compare=[tree.resolve() for tree in args.compare],
            loads=args.loads, kinds=args.kinds, window_s=args.window, name=args.name,
            one_stream=args.one_stream, split_plain=args.split_plain)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
