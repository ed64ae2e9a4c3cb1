"""Which Kafka cluster an ensemble's groups use, when ZooKeeper registers no broker (a KRaft cluster).

The answer is what the ensemble's bridges published (`migration/authority/<consumerId>`, `bootstrap`): the
first group in name order with such a publication, its first bridge by consumer id. Before a migration starts
no group has a bridge, so every group of the ensemble is read to find none: the reads are pipelined
`DISCOVERY_BATCH` groups at a time on one socket (`migrator.zk.wire`; kazoo's async calls for a SASL identity), two
round trips a batch instead of two a group.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from migrator.errors import CorruptNodeError
from migrator.fleet.scan import list_groups
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.protocol.codecs import PublishedAuthority
from migrator.zk.brokers import registered_brokers
from migrator.zk.client import ZkTls
from migrator.zk.group_reader import MISSING, ReadPipeline, pipeline_of
from migrator.zk.paths import GroupPaths
from migrator.zk.session import ZkSession

DISCOVERY_BATCH = 1000
"""Groups whose publications are read in one pipeline: bounds the requests in flight."""


def first_bootstrap(
    groups: Sequence[str],
    bridges: Mapping[str, Sequence[str]],
    published: Mapping[tuple[str, str], PublishedAuthority | None],
) -> str:
    """The bootstrap of the first of `groups` (in their order) whose bridges (by consumer id) published one,
    "" when none did; `published[(group, bridge)]` is None for a node gone or unreadable."""
    for group in groups:
        for bridge in sorted(bridges.get(group, ())):
            node = published.get((group, bridge))
            if node is not None and node.bootstrap:
                return node.bootstrap
    return ""


def first_published_bootstrap(source: ZkSession | ReadPipeline, groups: Sequence[str]) -> str:
    """`first_bootstrap` over the ensemble's nodes, read `DISCOVERY_BATCH` groups at a time; stops at the
    first batch that has one."""
    pipe = pipeline_of(source)
    for start in range(0, len(groups), DISCOVERY_BATCH):
        batch = groups[start : start + DISCOVERY_BATCH]
        bridges = _bridges(pipe, batch)
        if found := first_bootstrap(batch, bridges, _publications(pipe, bridges)):
            return found
    return ""


def _bridges(pipe: ReadPipeline, groups: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each group's bridges that published (the children of its `migration/authority`)."""
    out: dict[str, tuple[str, ...]] = {}

    def listed(group: str) -> Callable[[Any], None]:
        return lambda answer: out.__setitem__(group, () if answer is MISSING else tuple(answer))

    for g in groups:
        pipe.children(GroupPaths(g).authority, listed(g))
    pipe.drain()
    return out


def _publications(
    pipe: ReadPipeline, bridges: Mapping[str, Sequence[str]]
) -> dict[tuple[str, str], PublishedAuthority | None]:
    out: dict[tuple[str, str], PublishedAuthority | None] = {}

    def read(key: tuple[str, str]) -> Callable[[Any], None]:
        return lambda answer: out.__setitem__(key, _decoded(answer))

    for g, ids in bridges.items():
        for b in ids:
            pipe.get(GroupPaths(g).published_authority(b), read((g, b)))
    pipe.drain()
    return out


@contextlib.contextmanager
def bulk_reads(
    zk: ZkSession, ensemble: str, auth: str | None, tls: ZkTls | None, timeout_s: float
) -> Iterator[ZkSession | ReadPipeline]:
    """A session for many reads on one socket (`migrator.zk.wire`), or the client itself for a SASL identity."""
    from migrator.zk.wire import WireSession, wire_supported

    if not wire_supported(auth):
        yield zk
        return
    with WireSession(ensemble, auth, timeout_s, tls) as session:
        yield session


def _decoded(answer: Any) -> PublishedAuthority | None:
    if answer is MISSING:
        return None  # the bridge left between the listing and the read
    try:
        return PublishedAuthority.decode(answer[0])
    except CorruptNodeError:
        return None  # an unreadable publication names no cluster; the next bridge's may


def ensemble_bootstrap(
    zk: ZkSession, ensemble: str, security_protocol: str | None, zk_auth: str | None, zk_tls: ZkTls | None,
    timeout_s: float,
) -> str:  # fmt: skip
    """The brokers registered under the ensemble's /brokers/ids (at the endpoint of `security_protocol`), else
    (a KRaft cluster) what its bridges joined; "" when neither says."""
    found = registered_brokers(zk, security_protocol)
    if not found:
        with bulk_reads(zk, ensemble, zk_auth, zk_tls, timeout_s) as reads:
            found = first_published_bootstrap(reads, list_groups(zk))
    return found


def group_max_sizes(
    bootstrap: Mapping[str, str | None], props: Mapping[str, str], timeout_s: float, warn: Callable[[str], None]
) -> dict[str, int | None]:
    """Each ensemble's Kafka `group.max.size` (asked once per cluster; None where unknown, each such cluster
    named to `warn`)."""
    sizes: dict[str, int | None] = {}
    cache: dict[str, int | None] = {}
    for ensemble, servers in bootstrap.items():
        if servers and servers not in cache:
            try:
                cache[servers] = KafkaAdmin(servers, dict(props), timeout_s).group_max_size()
            except KafkaUnavailable as exc:
                warn(f"group.max.size of {servers} unknown: {exc}")
                cache[servers] = None
        sizes[ensemble] = cache.get(servers) if servers else None
    return sizes
