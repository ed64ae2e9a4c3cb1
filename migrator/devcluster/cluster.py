"""A real ZooKeeper + ZooKeeper-mode Kafka cluster on loopback, for tests, the demo and benchmarks.

Real JVMs rather than fakes: the migrator's safety depends on what a real broker and a real ZooKeeper
do (ephemeral nodes, session expiry, group coordinator errors), so tests must see exactly that.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import TracebackType

from migrator.devcluster import class_archive, config, process, security, state
from migrator.devcluster.jars import ensure_jars, ensure_old_consumer_jars, require_java
from migrator.devcluster.paths import KAFKA_VERSION, OLD_CONSUMER_VERSION, valid_name
from migrator.devcluster.ports import HOST, accepts, ensure_port_free, four_letter_word, free_port
from migrator.devcluster.proxy import SilentProxy
from migrator.devcluster.readiness import wait_broker_ready, wait_broker_unregistered, wait_zookeeper_ready
from migrator.errors import EnvironmentProblem, UsageError

READY_TIMEOUT_S = 90.0
KAFKA_VERSIONS = (KAFKA_VERSION, "2.8.2", OLD_CONSUMER_VERSION)
"""The brokers the suite runs against; each brings the ZooKeeper it was released with (3.8.4, 3.5.9, 3.4.10)."""
_auto_names = itertools.count(1)


def _check_layout(brokers: int, zookeepers: int, kafka_version: str, group_max_size: int | None) -> None:
    if brokers < 1:
        raise UsageError(f"--brokers must be at least 1, got {brokers}")
    if zookeepers < 1:
        raise UsageError(f"--zookeepers must be at least 1, got {zookeepers}")
    if kafka_version not in KAFKA_VERSIONS:
        raise UsageError(f"--kafka-version must be one of {', '.join(KAFKA_VERSIONS)}, got {kafka_version!r}")
    if group_max_size is not None and group_max_size < 1:
        raise UsageError(f"--group-max-size must be at least 1, got {group_max_size}")


def _check_options(*, broker_proxies: bool, detached: bool, secured: bool) -> None:
    if broker_proxies and detached:
        raise UsageError("broker proxies live in the starting process: they cannot be detached")
    if broker_proxies and secured:
        raise UsageError("broker proxies forward the PLAINTEXT listener only: not with secured listeners")


def _cluster_name(name: str | None) -> str:
    """The given name, checked, or a fresh one unique to this process."""
    name = name or f"py{os.getpid()}-{next(_auto_names)}"
    if not valid_name(name):
        raise UsageError(f"cluster name {name!r} must be letters, digits, '.', '_' or '-'")
    return name


class DevCluster:
    """Handle on one dev cluster; `down()` stops only the processes this cluster started."""

    def __init__(self, st: state.ClusterState) -> None:
        self._state = st
        self._down = False
        self._proxies: dict[str, SilentProxy] = {}

    # ----- lifecycle -------------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        brokers: int = 1,
        group_max_size: int | None = None,
        name: str | None = None,
        extra_broker_config: Mapping[str, object] | None = None,
        *,
        detached: bool = False,
        ready_timeout: float = READY_TIMEOUT_S,
        zookeepers: int = 1,
        kafka_version: str = KAFKA_VERSION,
        broker_proxies: bool = False,
        secured: bool = False,
    ) -> DevCluster:
        """Start ZooKeeper (one server, or an ensemble of `zookeepers`) and `brokers` brokers of
        `kafka_version`, and block until all are ready.

        `detached=True` (the CLI's `up`) lets the JVMs outlive this Python process; otherwise they die
        with it (atexit + PR_SET_DEATHSIG). `broker_proxies=True` advertises each broker behind a
        `SilentProxy` living in this process (`proxy("broker-1")`), so every client, the broker itself
        included, reaches it through the proxy and a drill can make it go silent. `secured=True` adds
        SSL, SASL_SSL and SASL_PLAINTEXT listeners beside each broker's PLAINTEXT one (`security`).
        """
        _check_layout(brokers, zookeepers, kafka_version, group_max_size)
        _check_options(broker_proxies=broker_proxies, detached=detached, secured=secured)
        name = _cluster_name(name)
        java = require_java()
        libs = broker_jars(kafka_version)
        state.sweep_stale()
        with state.name_lock(name):
            existing = state.load(name)
            if existing is not None and existing.backend == "local" and existing.alive_pids():
                raise cls(existing)._already_running()
            if existing is not None:
                state.remove(existing, forget_name=False)  # we hold its lock file
            layout = _Layout(brokers, zookeepers, broker_proxies, secured)
            cluster = cls(_plan(name, layout, group_max_size, extra_broker_config, libs, detached))
            if not detached:
                atexit.register(cluster.down)
            try:
                cluster._start_proxies()
                cluster._launch_all(java, ready_timeout)
            except BaseException:
                cluster.down()
                raise
        return cluster

    def _already_running(self) -> EnvironmentProblem:
        name = self._state.name
        return EnvironmentProblem(
            f"dev cluster {name!r} is already running (ZOOKEEPER={self.zookeeper} "
            f"BOOTSTRAP_SERVERS={self.bootstrap_servers}): use it, stop it with "
            f"`migrator dev-cluster down --name {name}`, or pick another --name"
        )

    @classmethod
    def attach(cls, name: str = "default") -> DevCluster:
        """Re-open a cluster started by another process, from its state file."""
        st = state.load(name)
        if st is None or (st.backend == "local" and not st.alive_pids()):
            raise EnvironmentProblem(
                f"no dev cluster named {name!r} is running: start one with `migrator dev-cluster up --name {name}`"
            )
        return cls(st)

    def down(self) -> None:
        """Stop this cluster's processes (brokers first, then ZooKeeper) and remove its directories."""
        if self._down:
            return
        self._down = True
        with contextlib.suppress(Exception):
            atexit.unregister(self.down)
        st = self._state
        marker = st.cluster_dir
        broker_pids = [p.pid for p in st.processes if p.broker_id is not None and p.pid]
        process.terminate(broker_pids, marker, timeout=10.0)
        process.terminate([p.pid for p in st.processes if p.broker_id is None and p.pid], marker, timeout=5.0)
        for proxy in self._proxies.values():
            proxy.close()
        self._install_class_archives(st.processes)
        state.remove(st)

    def __enter__(self) -> DevCluster:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.down()

    # ----- addresses ----------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._state.name

    @property
    def zookeeper(self) -> str:
        return ",".join(f"{HOST}:{port}" for port in self._state.zookeeper_ports)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{HOST}:{p.client_port}" for p in self._state.processes if p.broker_id is not None)

    @property
    def secured(self) -> security.SecuredListeners | None:
        """The SSL/SASL listeners and their client properties, when started with `secured=True`."""
        return security.SecuredListeners.load(self.cluster_dir)

    @property
    def zookeeper_names(self) -> list[str]:
        return [p.name for p in self._state.processes if p.broker_id is None]

    def zookeeper_leader(self) -> str | None:
        """The ensemble's leader now (a standalone server is its own), or None while there is no quorum."""
        for proc in self._state.processes:
            if proc.broker_id is None and self.is_running(proc.name):
                mode = _server_mode(proc.port)
                if mode in ("leader", "standalone"):
                    return proc.name
        return None

    def proxy(self, process_name: str) -> SilentProxy:
        """The proxy in front of a broker started with `broker_proxies=True`."""
        try:
            return self._proxies[process_name]
        except KeyError:
            raise UsageError(f"{process_name!r} has no proxy: start the cluster with broker_proxies=True") from None

    @property
    def process_names(self) -> list[str]:
        return [p.name for p in self._state.processes]

    @property
    def cluster_dir(self) -> Path:
        return Path(self._state.cluster_dir)

    @property
    def state_file(self) -> Path:
        return state.state_path(self.name)

    def port(self, process_name: str) -> int:
        return self._proc(process_name).port

    def pids(self) -> dict[str, int]:
        """Live pids by process name (stopped processes are absent)."""
        return {
            p.name: p.pid for p in self._state.processes if p.pid and process.is_ours(p.pid, self._state.cluster_dir)
        }

    def is_running(self, process_name: str) -> bool:
        return process_name in self.pids()

    def log_file(self, process_name: str) -> Path:
        return self.cluster_dir / f"{process_name}.log"

    def peak_rss_kb(self) -> dict[str, int]:
        return {name: process.peak_rss_kb(pid) for name, pid in self.pids().items()}

    def mntr(self) -> dict[str, str]:
        """ZooKeeper's `mntr` counters (e.g. `zk_packets_received`), to count requests in benchmarks."""
        text = four_letter_word(self._state.zookeeper_port, "mntr")
        if not text.strip():
            raise EnvironmentProblem(f"ZooKeeper at {self.zookeeper} did not answer `mntr`")
        out: dict[str, str] = {}
        for line in text.splitlines():
            key, sep, value = line.partition("\t")
            if sep:
                out[key.strip()] = value.strip()
        return out

    # ----- fault injection ----------------------------------------------------------------------------

    def stop_process(self, process_name: str, kill: bool = False) -> None:
        """Stop one process (SIGTERM, or SIGKILL with kill=True) and wait until it is gone."""
        proc = self._proc(process_name)
        if proc.pid:
            process.terminate([proc.pid], self._state.cluster_dir, timeout=30.0, kill=kill)
        proc.pid = 0
        state.save(self._state)
        self._install_class_archives([proc])

    def start_process(self, process_name: str, ready_timeout: float = READY_TIMEOUT_S) -> None:
        """Restart a stopped process on its old port and data dir; returns once it is ready again."""
        proc = self._proc(process_name)
        if proc.pid and process.is_ours(proc.pid, self._state.cluster_dir):
            return
        if proc.broker_id is not None and any(accepts(port) for port in self._state.zookeeper_ports):
            # a SIGKILLed broker's registration lingers until its ZooKeeper session expires
            wait_broker_unregistered(self.zookeeper, proc.broker_id, config.BROKER_ZK_SESSION_MS / 1000 + 10)
        self._launch(proc, require_java(), ready_timeout)

    # ----- internals ----------------------------------------------------------------------------------

    def _proc(self, process_name: str) -> state.ProcessState:
        try:
            return self._state.process(process_name)
        except KeyError:
            raise UsageError(
                f"unknown process {process_name!r}: expected one of {', '.join(self.process_names)}"
            ) from None

    def _start_proxies(self) -> None:
        for proc in self._state.processes:
            if proc.advertised_port:
                self._proxies[proc.name] = SilentProxy(proc.port, listen_port=proc.advertised_port).start()

    def _launch_all(self, java: str, ready_timeout: float) -> None:
        """ZooKeeper servers in parallel (an ensemble member is ready only with a quorum), then the brokers."""
        zookeepers = [p for p in self._state.processes if p.broker_id is None]
        brokers = [p for p in self._state.processes if p.broker_id is not None]
        for batch in (zookeepers, brokers):
            deadline = time.monotonic() + ready_timeout
            for proc in batch:
                self._spawn(proc, java)
            for proc in batch:
                self._await(proc, max(1.0, deadline - time.monotonic()))

    def _launch(self, proc: state.ProcessState, java: str, ready_timeout: float) -> None:
        self._spawn(proc, java)
        self._await(proc, ready_timeout)

    def _spawn(self, proc: state.ProcessState, java: str) -> None:
        st = self._state
        ensure_port_free(proc.port, proc.name)
        is_broker = proc.broker_id is not None
        main = self._main(proc)
        cmd = config.jvm_command(
            java,
            Path(st.libs),
            self.cluster_dir / "log4j.properties",
            self.log_file(proc.name),
            config.BROKER_HEAP if is_broker else config.ZK_HEAP,
            main,
            Path(proc.config),
            class_archive.jvm_options(class_archive.archive_path(java, Path(st.libs), main), self._dumped(proc)),
        )
        tie = not st.detached and st.owner_pid == os.getpid()
        proc.pid = process.spawn(cmd, self.cluster_dir / f"{proc.name}.out", self.cluster_dir, tie)
        state.save(st)

    def _main(self, proc: state.ProcessState) -> str:
        return config.KAFKA_MAIN if proc.broker_id is not None else self._zookeeper_main()

    def _dumped(self, proc: state.ProcessState) -> Path:
        """Where `proc`'s JVM writes its class archive at exit when the cache has none yet."""
        return self.cluster_dir / f"{proc.name}{class_archive.SUFFIX}"

    def _install_class_archives(self, stopped: list[state.ProcessState]) -> None:
        """Keep the first usable class archive of each kind of process for the next JVMs (`class_archive`)."""
        try:
            java = require_java()
        except EnvironmentProblem:
            return
        libs = Path(self._state.libs)
        for proc in stopped:
            archive = class_archive.archive_path(java, libs, self._main(proc))
            class_archive.install(java, libs, archive, self._dumped(proc))

    def _zookeeper_main(self) -> str:
        return config.ZK_QUORUM_MAIN if len(self._state.zookeeper_ports) > 1 else config.ZK_MAIN

    def _await(self, proc: state.ProcessState, timeout: float) -> None:
        def alive() -> bool:
            return process.is_alive(proc.pid)

        logs = [self.cluster_dir / f"{proc.name}.out", self.log_file(proc.name)]
        if proc.broker_id is None:
            wait_zookeeper_ready(proc.port, alive, logs, timeout)
        else:
            wait_broker_ready(self.zookeeper, proc.broker_id, proc.port, alive, logs, timeout)


def broker_jars(kafka_version: str = KAFKA_VERSION) -> Path:
    """The jar directory of a broker version: Kafka 1.1.1 has no Scala 2.13 build, so it is the old consumer's set."""
    if kafka_version == OLD_CONSUMER_VERSION:
        return ensure_old_consumer_jars()
    return ensure_jars(kafka_version)


def _server_mode(port: int) -> str:
    """`leader`, `follower` or `standalone` from `srvr`; '' when not serving (no quorum, or down)."""
    for line in four_letter_word(port, "srvr").splitlines():
        if line.startswith("Mode:"):
            return line.partition(":")[2].strip()
    return ""


@dataclass(frozen=True, slots=True)
class _Layout:
    """How many of each process, and whether brokers sit behind proxies."""

    brokers: int
    zookeepers: int
    broker_proxies: bool
    secured: bool = False


def _plan(
    name: str,
    layout: _Layout,
    group_max_size: int | None,
    extra: Mapping[str, object] | None,
    libs: Path,
    detached: bool,
) -> state.ClusterState:
    """Create the cluster directory, pick ports and write every config file."""
    root = Path(tempfile.mkdtemp(prefix=f"migrator-{name}-"))
    with resources.as_file(resources.files("migrator.devcluster") / "log4j.properties") as src:
        shutil.copyfile(src, root / "log4j.properties")
    ports = _free_ports(3 * layout.zookeepers + 2 * layout.brokers)
    taken = set(ports)
    procs = _plan_zookeepers(root, layout.zookeepers, ports)
    zookeeper = ",".join(f"{HOST}:{p.port}" for p in procs)
    broker_ports = [ports.pop() for _ in range(layout.brokers)]
    zk_tls = security.plan_zookeeper_tls([Path(p.config) for p in procs], taken) if layout.secured else ""
    listeners = (security.plan_listeners(root, broker_ports, taken, zk_tls) if layout.secured
                 else [{} for _ in broker_ports])  # fmt: skip
    for broker_id, (port, secured) in enumerate(zip(broker_ports, listeners, strict=True), start=1):
        advertised = ports.pop() if layout.broker_proxies else 0
        cfg = root / f"broker-{broker_id}.properties"
        log_dir = root / f"broker-{broker_id}-data"
        props = {**secured, **(extra or {})}
        cfg.write_text(config.server_properties(broker_id, port, zookeeper, log_dir, group_max_size, props,
                                                advertised_port=advertised or None))  # fmt: skip
        procs.append(state.ProcessState(name=f"broker-{broker_id}", port=port, config=str(cfg), broker_id=broker_id,
                                        advertised_port=advertised))  # fmt: skip
    return state.ClusterState(
        name=name,
        cluster_dir=str(root),
        libs=str(libs),
        owner_pid=os.getpid(),
        detached=detached,
        processes=procs,
    )


def _free_ports(count: int) -> list[int]:
    """`count` distinct free ports, lowest last (so `pop()` gives the first ZooKeeper the lowest, as before)."""
    ports: set[int] = set()
    while len(ports) < count:
        ports.add(free_port())
    return sorted(ports, reverse=True)


def _plan_zookeepers(root: Path, count: int, ports: list[int]) -> list[state.ProcessState]:
    """One standalone `zookeeper`, or an ensemble `zookeeper-1..count` (client, peer and election port each)."""
    clients = [ports.pop() for _ in range(count)]
    ensemble = [config.QuorumPeer(i, ports.pop(), ports.pop()) for i in range(1, count + 1)] if count > 1 else []
    procs = []
    for i, client_port in enumerate(clients, start=1):
        suffix = f"-{i}" if count > 1 else ""
        data = root / f"zookeeper{suffix}-data"
        data.mkdir()
        if ensemble:
            (data / "myid").write_text(f"{i}\n")
        cfg = root / f"zoo{suffix}.cfg"
        cfg.write_text(config.zoo_cfg(client_port, data, ensemble))
        procs.append(state.ProcessState(name=f"zookeeper{suffix}", port=client_port, config=str(cfg)))
    return procs
