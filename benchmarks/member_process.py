"""Group members as child processes, one process per member, as they are deployed.

A benchmark that ran 16 bridges (with 64 stream threads) in one Python interpreter would measure the
interpreter's lock, not the bridge: every ZooKeeper reply would queue behind every other member's record
processing. Each `RemoteMember` therefore runs one connector (or one plain confluent-kafka consumer) in a
`spawn`ed child and streams what it processed back over a pipe into the parent's `LiveLog`, on the shared
wall clock, so the observer and the pause measurement work exactly as with in-process members.

Protocol, child to parent: ("info", MemberInfo), ("subscribed", ns) when the member asked to join,
("records", [tuple, ...]) every `FORWARD_S`, ("assigned", {partition, ...}) when a plain consumer's
assignment changes, and finally ("stopped", error text or ""). Parent to child: "stop" (the parent's own
teardown: `shutdown()` at once), or SIGTERM (`RemoteMember.terminate`), on which the member leaves as an
application on the public API does when its process is told to stop: its stream threads leave their loops,
then it commits and shuts down (a plain consumer leaves its poll loop, commits and closes).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import threading
import time
import traceback
from dataclasses import astuple, dataclass
from multiprocessing.connection import Connection
from typing import Any

from migrator.demo.workload import (
    PLAIN_HEARTBEAT_MS,
    QUIET_LOGGER,
    ConnectorMember,
    LiveLog,
    MemberInfo,
    PlainConsumer,
    quiet_libraries,
)
from migrator.logs import LIBRDKAFKA_LOGGER
from migrator.observe.records import Handle, Processed, ProcessingLog

FORWARD_S = 0.005  # batching of processed records: well below the pause resolution (10 ms)
TRIGGER_LOGGER = "benchmarks.member"
DEBUG_ENV = "MIGRATOR_MEMBER_DEBUG"
"""With member logs, librdkafka `debug` contexts (e.g. `cgrp`) for the embedded members and plain consumers,
whose librdkafka log then goes to the member's log too: when each JoinGroup was sent, for instance."""
START_TIMEOUT_S = 60.0
CONNECTOR_COMMIT_MS = "60000"
"""The connectors' periodic commit: the connector's default, not the demo's 1 s. The plain consumers beside
them commit only at revokes and stops, as the connectors do at releases; a commit to both stores every second
would put on the connectors alone a steady load that the pauses of a loaded machine then measure."""


@dataclass(frozen=True)
class MemberSpec:
    kind: str  # "legacy", "bridge" or "plain"
    name: str
    zookeeper: str
    bootstrap: str
    group: str
    topic: str
    streams: int
    log_dir: str | None = None  # when set, the member's rebalance and consumer log goes to <dir>/<name>.log
    assignor: str | None = None  # the Kafka side's partition.assignment.strategy (None: the client's default)


class _Outbox(ProcessingLog):
    """The child's processing log: it keeps nothing, it queues finished records for the parent."""

    def __init__(self) -> None:
        super().__init__()
        self._out_lock = threading.Lock()
        self._out: list[tuple[Any, ...]] = []

    def end(self, handle: Handle) -> Processed:
        record = Processed(handle.member, handle.thread_id, handle.topic, handle.partition, handle.offset,
                           handle.start_ns, time.time_ns())  # fmt: skip
        with self._out_lock:
            self._out.append(astuple(record))
        return record

    def take(self) -> list[tuple[Any, ...]]:
        with self._out_lock:
            out, self._out = self._out, []
        return out


def _child(spec: MemberSpec, conn: Connection) -> None:
    terminated = threading.Event()
    signal.signal(signal.SIGTERM, lambda _sig, _frame: terminated.set())  # only a flag: the app acts on it
    quiet_libraries()
    debug = ""
    if spec.log_dir:
        handler = logging.FileHandler(f"{spec.log_dir}/{spec.name}.log")
        handler.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(message)s"))
        for name in (
            "migrator.coordination",
            "migrator.consumer",
            "migrator.kafka",
            "migrator.connector",
            TRIGGER_LOGGER,
        ):
            logger = logging.getLogger(name)  # phases, releases, leaves, the connector's start, the join's trigger
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
        # when the embedded member's revoke and assignment callbacks ran, between the worker's phases
        logging.getLogger("migrator.kafka.member").setLevel(logging.DEBUG)
        debug = _librdkafka_debug(handler)
    log = _Outbox()
    member: ConnectorMember | PlainConsumer
    strategy = {"partition.assignment.strategy": spec.assignor} if spec.assignor else {}
    if debug:  # asked for, with member logs
        strategy["debug"] = debug
    if spec.kind == "plain":
        member = PlainConsumer(spec.bootstrap, spec.group, spec.topic, log, spec.name, strategy).start()
    else:
        bootstrap = spec.bootstrap if spec.kind == "bridge" else None
        like_plain = {"auto.commit.interval.ms": CONNECTOR_COMMIT_MS}
        if bootstrap:
            like_plain["coordination.migration.heartbeat.interval.ms"] = str(PLAIN_HEARTBEAT_MS)
            like_plain |= {f"coordination.migration.{k}": v for k, v in strategy.items()}
        member = ConnectorMember(
            spec.zookeeper, spec.group, spec.name, spec.topic, spec.streams, log, bootstrap, extra=like_plain
        )
    conn.send(("info", member.info))
    stop = threading.Event()

    def forward() -> None:
        subscribed_sent = False
        assigned: set[int] | None = None
        while not stop.wait(FORWARD_S):
            if not subscribed_sent and member.subscribed_ns:
                conn.send(("subscribed", member.subscribed_ns))
                subscribed_sent = True
                if spec.log_dir:  # the join's trigger beside the member's phases (and librdkafka's JoinGroup)
                    logging.getLogger(TRIGGER_LOGGER).info("asked to join at %d ns", member.subscribed_ns)
            if isinstance(member, PlainConsumer):
                now = member.assigned_now()
                if now != assigned:
                    assigned = now
                    conn.send(("assigned", now))
            batch = log.take()
            if batch:
                conn.send(("records", batch))

    forwarder = threading.Thread(target=forward, name="forward", daemon=True)
    forwarder.start()

    def on_stop() -> None:
        with contextlib.suppress(EOFError, OSError):
            conn.recv()  # "stop" (or EOF when the parent died)
        stop_asked.set()

    stop_asked = threading.Event()
    threading.Thread(target=on_stop, name="stop-listener", daemon=True).start()
    while not (terminated.is_set() or stop_asked.is_set()):
        terminated.wait(0.05)  # the main thread stays free for the signal handler
    error = ""
    try:
        if terminated.is_set() and isinstance(member, ConnectorMember):
            laps = member.leave()
            if spec.log_dir:
                logging.getLogger("migrator.consumer").info(
                    "left on SIGTERM: %s", ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in laps.items())
                )
        else:
            member.shutdown()  # a plain consumer's shutdown is already its app's clean leave
    except BaseException:  # reported to the parent, which fails the run
        error = traceback.format_exc(limit=3)
    stop.set()
    forwarder.join()
    conn.send(("records", log.take()))
    conn.send(("stopped", error))


def _librdkafka_debug(handler: logging.Handler) -> str:
    """The librdkafka debug contexts `DEBUG_ENV` asks for ("" for none); when some, the embedded members' and
    plain consumers' librdkafka logs go to `handler` as well."""
    debug = os.environ.get(DEBUG_ENV, "")
    if debug:
        for name in (LIBRDKAFKA_LOGGER, QUIET_LOGGER):
            logger = logging.getLogger(name)
            logger.addHandler(handler)
            logger.setLevel(logging.DEBUG)
    return debug


class RemoteMember:
    """The parent's handle on a member in a child process; it satisfies the demo driver's `Member`."""

    def __init__(self, spec: MemberSpec, log: LiveLog) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child_conn = ctx.Pipe()
        self._log = log
        self._info: MemberInfo | None = None
        self._ready = threading.Event()
        self._subscribed = threading.Event()
        self._stopped = threading.Event()
        self.subscribed_ns = 0
        self._assigned: set[int] = set()
        self._error = ""
        self._process = ctx.Process(target=_child, args=(spec, child_conn), name=f"member-{spec.name}", daemon=True)
        self._process.start()
        child_conn.close()
        self._receiver = threading.Thread(target=self._receive, name=f"receive-{spec.name}", daemon=True)
        self._receiver.start()

    def _receive(self) -> None:
        try:
            while True:
                kind, payload = self._conn.recv()
                if kind == "records":
                    self._log.extend(Processed(*t) for t in payload)
                elif kind == "assigned":
                    self._assigned = payload
                elif kind == "subscribed":
                    self.subscribed_ns = payload
                    self._subscribed.set()
                elif kind == "info":
                    self._info = payload
                    self._ready.set()
                elif kind == "stopped":
                    self._error = payload
                    return
        except (EOFError, OSError):
            self._error = self._error or "the member process died"
        finally:
            self._ready.set()
            self._subscribed.set()
            self._stopped.set()

    @property
    def info(self) -> MemberInfo:
        return self.wait_started(START_TIMEOUT_S)

    def wait_started(self, timeout_s: float) -> MemberInfo:
        """The member's info once its process is up (a connector: after its first rebalance)."""
        if not self._ready.wait(timeout_s) or self._info is None:
            raise RuntimeError(f"member process did not start: {self._error or 'timeout'}")
        return self._info

    def wait_subscribed(self) -> int:
        """When the member asked to join (its child's clock): the trigger of a join's pause."""
        self._subscribed.wait(START_TIMEOUT_S)
        return self.subscribed_ns

    @property
    def pid(self) -> int | None:
        """The member's process id (its CPU is read from /proc by the benchmarks)."""
        return self._process.pid

    def assigned_now(self) -> set[int]:
        return set(self._assigned)

    def terminate(self) -> int:
        """SIGTERM the member's process (it leaves cleanly; `shutdown()` then waits for it) and return when
        it was sent: the trigger of a leave's pause."""
        sent = time.time_ns()
        os.kill(self._process.pid, signal.SIGTERM)  # type: ignore[arg-type]
        return sent

    def shutdown(self) -> None:
        if not self._ready.is_set():  # still starting (a teardown after a failed start): it holds nothing yet
            self._process.kill()
            self._process.join(timeout=30.0)
            return
        with contextlib.suppress(OSError):  # the child is gone already: its error says why
            self._conn.send("stop")
        self._stopped.wait(60.0)
        self._process.join(timeout=30.0)
        if self._process.is_alive():
            self._process.kill()
        if self._error:
            raise RuntimeError(f"member {self._info.name if self._info else '?'} failed: {self._error}")
