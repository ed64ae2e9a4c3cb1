"""Reading and classifying a slice of the fleet: what one Spark partition (or one plain process) runs.

Each slice opens its own kazoo client per ensemble and its own Kafka admin client, reads its groups with
pipelined requests (`read_groups`, `FleetKafkaReader`) and yields one row per group. No pyspark here, so
the same code serves executors, the apply step's re-reads, the tests and the benchmark's baseline.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from migrator.errors import UsageError
from migrator.fleet.classify import classify, to_row
from migrator.fleet.kafka_reader import FleetKafkaReader
from migrator.fleet.model import FleetRow, KafkaGroupFacts
from migrator.protocol.group_view import GroupView
from migrator.zk.client import connect_problem
from migrator.zk.group_reader import read_groups
from migrator.zk.paths import CONSUMERS

CHUNK_GROUPS = 500


def now_ms() -> int:
    return int(time.time() * 1000)


def split_ensembles(values: Iterable[str]) -> list[str]:
    """`--zookeeper` values → ensembles: `;` separates ensembles, `,` the hosts of one (repeatable option)."""
    ensembles: list[str] = []
    for value in values:
        for part in value.split(";"):
            part = part.strip()
            if part and part not in ensembles:
                ensembles.append(part)
    if not ensembles:
        raise UsageError("--zookeeper: give at least one ensemble (host:port[,host:port...][/chroot])")
    for ensemble in ensembles:
        problem = connect_problem(ensemble)
        if problem is not None:
            raise UsageError(f"--zookeeper: {problem}")
    return ensembles


def pair_bootstrap(ensembles: Sequence[str], bootstrap: str | None) -> dict[str, str | None]:
    """One Kafka cluster for all ensembles, or one per ensemble (`;`-separated, in the same order)."""
    if not bootstrap:
        return dict.fromkeys(ensembles)
    parts = [b.strip() for b in bootstrap.split(";") if b.strip()]
    if len(parts) == 1:
        return dict.fromkeys(ensembles, parts[0])
    if len(parts) != len(ensembles):
        raise UsageError(
            f"--bootstrap-servers: {len(parts)} clusters for {len(ensembles)} ensembles; give one, or one per ensemble"
        )
    return dict(zip(ensembles, parts, strict=True))


@dataclass(frozen=True)
class ScanSettings:
    """Everything an executor needs; small and picklable."""

    bootstrap: Mapping[str, str | None]
    stable_for_ms: int
    now_ms: int
    group_max_size: Mapping[str, int | None] = field(default_factory=dict)
    zk_auth: str | None = None
    kafka_properties: Mapping[str, str] = field(default_factory=dict)
    zk_timeout_s: float = 15.0
    kafka_timeout_s: float = 15.0


def group_filter(include: str | None, exclude: str | None):
    """A predicate over group names from the --include/--exclude regexes (full search, like grep)."""
    try:
        inc = re.compile(include) if include else None
        exc = re.compile(exclude) if exclude else None
    except re.error as err:
        raise UsageError(f"--include/--exclude: bad regular expression: {err}") from err

    def keep(group: str) -> bool:
        return (inc is None or inc.search(group) is not None) and (exc is None or exc.search(group) is None)

    return keep


def list_groups(zk: KazooClient, keep=None) -> list[str]:
    try:
        names = zk.get_children(CONSUMERS)
    except NoNodeError:
        return []
    return sorted(g for g in names if keep is None or keep(g))


def connect_zk(ensemble: str, settings: ScanSettings) -> KazooClient:
    from migrator.zk.client import connect  # imported late: executors pay for it only when they run

    return connect(ensemble, auth=settings.zk_auth, timeout_s=settings.zk_timeout_s)


def scan_views(
    ensemble: str,
    views: Sequence[GroupView],
    kafka_reader: FleetKafkaReader | None,
    settings: ScanSettings,
) -> list[tuple[FleetRow, GroupView, KafkaGroupFacts | None]]:
    facts: Mapping[str, KafkaGroupFacts] = kafka_reader.read(views) if kafka_reader is not None else {}
    out = []
    max_size = settings.group_max_size.get(ensemble)
    for view in views:
        kafka = facts.get(view.group)
        c = classify(view, kafka, settings.now_ms, settings.stable_for_ms, max_size)
        out.append((to_row(ensemble, view, kafka, c, settings.now_ms), view, kafka))
    return out


def scan_slice(items: Iterable[tuple[str, str]], settings: ScanSettings) -> Iterator[FleetRow]:
    """Rows for (ensemble, group) pairs; one ZooKeeper and one Kafka client per ensemble in the slice."""
    by_ensemble: dict[str, list[str]] = {}
    for ensemble, group in items:
        by_ensemble.setdefault(ensemble, []).append(group)
    for ensemble, groups in by_ensemble.items():
        zk = connect_zk(ensemble, settings)
        bootstrap = settings.bootstrap.get(ensemble)
        reader = FleetKafkaReader(bootstrap, settings.kafka_properties, settings.kafka_timeout_s) if bootstrap else None
        try:
            for start in range(0, len(groups), CHUNK_GROUPS):
                views = read_groups(zk, groups[start : start + CHUNK_GROUPS])
                for row, _view, _kafka in scan_views(ensemble, list(views.values()), reader, settings):
                    yield row
        finally:
            zk.stop()
            zk.close()
