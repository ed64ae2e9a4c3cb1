"""Reading a pykafka group's nodes (`migrator.protocol.pykafka_layout`) and the partition leaders its owner
node names and assignment order depend on."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from migrator.protocol.layout_dialect import LayoutEvidence, Recognition, recognise
from migrator.protocol.pykafka_layout import OwnerNode, Spelling, decode_owner, decode_partition_leader, topic_text
from migrator.zk.paths import BROKER_TOPICS, GroupPaths


def partition_leaders(zk: KazooClient, topic: str) -> dict[int, int]:
    """partition -> leader broker id, from the broker's `partitions/<p>/state` nodes ({} for no such topic)."""
    base = f"{BROKER_TOPICS}/{topic}/partitions"
    try:
        names = zk.get_children(base)
    except NoNodeError:
        return {}
    reads = {int(p): zk.get_async(f"{base}/{p}/state") for p in names if p.isdigit()}
    leaders: dict[int, int] = {}
    for partition, result in reads.items():
        with contextlib.suppress(NoNodeError):
            leaders[partition] = decode_partition_leader(result.get()[0])
    return leaders


@dataclass(frozen=True, slots=True)
class OwnerClaim:
    """One owner node of a pykafka group: where it is, and whose it is."""

    spelling: Spelling
    node: OwnerNode
    owner: str


def read_owner_nodes(zk: KazooClient, paths: GroupPaths, topic: str) -> list[OwnerClaim]:
    """Every owner node of `topic` under both folder spellings, sorted (a node gone meanwhile is skipped)."""
    reads = {}
    for spelling in Spelling:
        folder = f"{paths.owners}/{topic_text(topic, spelling)}"
        try:
            names = zk.get_children(folder)
        except NoNodeError:
            continue
        for name in names:
            node = OwnerNode.parse(name)
            if node is not None:
                reads[(spelling, node)] = zk.get_async(f"{folder}/{name}")
    claims = []
    for (spelling, node), result in reads.items():
        with contextlib.suppress(NoNodeError):
            claims.append(OwnerClaim(spelling, node, decode_owner(result.get()[0])))
    return sorted(claims, key=lambda c: (c.node.partition, c.node.leader, c.spelling.value))


def read_layout_evidence(zk: KazooClient, paths: GroupPaths) -> LayoutEvidence:
    """The `ids` data and `owners` child names `recognise` decides over, pipelined (nodes gone meanwhile are
    skipped: they were some member's, and the next read shows the group without them)."""
    try:
        ids = zk.get_children(paths.ids)
    except NoNodeError:
        ids = []
    try:
        folders = zk.get_children(paths.owners)
    except NoNodeError:
        folders = []
    id_reads = {cid: zk.get_async(paths.member(cid)) for cid in ids}
    folder_reads = {folder: zk.get_children_async(f"{paths.owners}/{folder}") for folder in folders}
    registrations: dict[str, bytes] = {}
    for cid, result in id_reads.items():
        with contextlib.suppress(NoNodeError):
            registrations[cid] = result.get()[0] or b""
    owners: dict[str, tuple[str, ...]] = {}
    for folder, children in folder_reads.items():
        with contextlib.suppress(NoNodeError):
            owners[folder] = tuple(sorted(children.get()))
    return LayoutEvidence(registrations, owners)


def recognise_group(zk: KazooClient, paths: GroupPaths) -> Recognition:
    return recognise(read_layout_evidence(zk, paths))
