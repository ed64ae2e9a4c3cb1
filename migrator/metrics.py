"""Prometheus metrics of CONTRACT §7, per connector (labels `group`, `client_id`).

The collectors are module-level (prometheus-client's registry is process-wide); `ConnectorMetrics` binds
the labels of one connector so that call sites stay one short line.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter, Gauge, Histogram, start_http_server
from prometheus_client.metrics import MetricWrapperBase

_L = ("group", "client_id")

ACTIVE_KAFKA = Gauge(
    "migrator_active_kafka_coordination", "1 while the authority is kafka, else 0 (ActiveKafkaCoordinationCount)", _L
)
KAFKA_OWNED = Gauge(
    "migrator_kafka_owned_partitions", "Partitions this member owns according to Kafka coordination", _L
)
OWNED = Gauge("migrator_owned_partitions", "Partitions owned (claimed in ZooKeeper) by authority", (*_L, "authority"))
REBALANCES = Counter("migrator_rebalances", "Completed rebalances", _L)
REBALANCE_FAILURES = Counter("migrator_rebalance_failures", "Rebalances that ran out of retries", _L)
REBALANCE_SECONDS = Histogram(
    "migrator_rebalance_duration_seconds",
    "Time from the first release to fetching again",
    _L,
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
AUTHORITY_SWITCHES = Counter("migrator_authority_switches", "Switches of the obeyed authority", (*_L, "to"))
CONFLICTS = Counter("migrator_ownership_conflicts", "Owner claims that found another thread's node", _L)
COMMITS = Counter("migrator_offset_commits", "Offset commits by store", (*_L, "store"))
COMMIT_FAILURES = Counter("migrator_offset_commit_failures", "Failed offset commits by store", (*_L, "store"))
RECORDS = Counter("migrator_records_consumed", "Records handed to application threads", _L)
LAG = Gauge(
    "migrator_consumer_lag",
    "Log end minus processed position, summed over owned partitions (measured at commits; unchanged while none)",
    _L,
)
MODES = ("absent", "zookeeper", "kafka", "unknown")
"""The values of the mode gauge's `mode` label: what /consumers/<group>/migration/mode holds."""
MODE = Gauge(
    "migrator_coordination_mode",
    "1 for the value the group's mode node held at this connector's last rebalance (absent, zookeeper, kafka, "
    "unknown), 0 for the others",
    (*_L, "mode"),
)
ZK_SESSION = Gauge("migrator_zookeeper_session_state", "1 connected, 0.5 suspended, 0 lost or closed", _L)
UNKNOWN_MODE = Counter("migrator_unknown_mode_values", "Mode node values other than kafka or zookeeper", _L)
SNAPSHOT_REJECTED = Counter(
    "migrator_snapshot_rejections", "Rebalances not started because the ZooKeeper snapshot was unusable", _L
)
KAFKA_UNAVAILABLE = Gauge(
    "migrator_kafka_coordination_unavailable", "1 while Kafka coordination is unavailable to this bridge", _L
)
FALLBACK_HELD = Gauge(
    "migrator_zookeeper_fallback_held",
    "1 while a bridge holds no partitions because falling back to ZooKeeper would overlap plain Kafka consumers",
    _L,
)


class ConnectorMetrics:
    def __init__(self, group: str, client_id: str) -> None:
        self.labels = {"group": group, "client_id": client_id}

    def _l(self, metric: MetricWrapperBase, **extra: str) -> Any:
        return metric.labels(**self.labels, **extra)

    def authority(self, kafka: bool, kafka_owned: int, owned: int) -> None:
        self._l(ACTIVE_KAFKA).set(1 if kafka else 0)
        self._l(KAFKA_OWNED).set(kafka_owned)
        self._l(OWNED, authority="kafka").set(owned if kafka else 0)
        self._l(OWNED, authority="zookeeper").set(0 if kafka else owned)

    def mode(self, value: str) -> None:
        """The mode node's value as last read: one of `MODES` is 1, the others 0."""
        for name in MODES:
            self._l(MODE, mode=name).set(1 if name == value else 0)

    def rebalanced(self, seconds: float) -> None:
        self._l(REBALANCES).inc()
        self._l(REBALANCE_SECONDS).observe(seconds)

    def rebalance_failed(self) -> None:
        self._l(REBALANCE_FAILURES).inc()

    def switched(self, to: str) -> None:
        self._l(AUTHORITY_SWITCHES, to=to).inc()

    def conflicts(self, n: int) -> None:
        self._l(CONFLICTS).inc(n)

    def committed(self, store: str, ok: bool) -> None:
        self._l(COMMITS if ok else COMMIT_FAILURES, store=store).inc()

    def consumed(self, n: int = 1) -> None:
        self._l(RECORDS).inc(n)

    def lag(self, value: int) -> None:
        self._l(LAG).set(value)

    def zk_session(self, value: float) -> None:
        self._l(ZK_SESSION).set(value)

    def unknown_mode(self) -> None:
        self._l(UNKNOWN_MODE).inc()

    def snapshot_rejected(self) -> None:
        self._l(SNAPSHOT_REJECTED).inc()

    def kafka_unavailable(self, unavailable: bool) -> None:
        self._l(KAFKA_UNAVAILABLE).set(1 if unavailable else 0)

    def fallback_held(self, held: bool) -> None:
        self._l(FALLBACK_HELD).set(1 if held else 0)


_started_ports: set[int] = set()


def serve(port: int) -> None:
    """Expose /metrics on `port` once per process (several connectors may share it)."""
    if port and port not in _started_ports:
        start_http_server(port)
        _started_ports.add(port)
