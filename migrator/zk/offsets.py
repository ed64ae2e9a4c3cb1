"""The ZooKeeper offset store: `/consumers/<group>/offsets/<topic>/<partition>` holds the next offset."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from migrator.errors import CorruptNodeError
from migrator.protocol.codecs import decode_offset, encode_offset
from migrator.protocol.partition import TopicPartition
from migrator.zk.paths import GroupPaths

log = logging.getLogger(__name__)


def start_reading_offsets(
    zk: KazooClient, paths: GroupPaths, tps: Iterable[TopicPartition]
) -> Callable[[], dict[TopicPartition, int]]:
    """Send the reads now; the returned function waits for them (so other I/O can overlap the round trip) and
    gives the next offsets, -1 where there is none (or the node is corrupt, which is logged)."""
    reads = {tp: zk.get_async(paths.offset(tp.topic, tp.partition)) for tp in tps}

    def collect() -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for tp, result in reads.items():
            try:
                out[tp] = decode_offset(result.get()[0])
            except NoNodeError:
                out[tp] = -1
            except CorruptNodeError as exc:
                log.warning("ignoring offset of %s: %s", tp, exc)
                out[tp] = -1
        return out

    return collect


def start_writing_offsets(
    zk: KazooClient, paths: GroupPaths, offsets: Mapping[TopicPartition, int], *, keep_newer: bool
) -> Callable[[], set[TopicPartition]]:
    """Send each offset node's write now; the returned function waits for the replies, creates the nodes that
    were missing (and their parents) and gives the partitions written. ZooKeeper applies one session's
    requests in order, so whatever this session sends later (the owner nodes' deletes of a release) is applied
    after them. `keep_newer`: a missing node another member created meanwhile keeps its offset, the newer one
    (a release's writes, sent before the next owner's); else it is set to ours."""
    sets = {tp: zk.set_async(paths.offset(tp.topic, tp.partition), encode_offset(o)) for tp, o in offsets.items()}

    def finish() -> set[TopicPartition]:
        missing = []
        for tp, result in sets.items():
            try:
                result.get()
            except NoNodeError:
                missing.append(tp)
        written = set(offsets)
        for tp in missing:
            path = paths.offset(tp.topic, tp.partition)
            try:
                zk.create(path, encode_offset(offsets[tp]), makepath=True)
            except NodeExistsError:
                if keep_newer:
                    written.discard(tp)
                else:
                    zk.set(path, encode_offset(offsets[tp]))
        return written

    return finish


def write_offsets(zk: KazooClient, paths: GroupPaths, offsets: Mapping[TopicPartition, int]) -> None:
    """Set each offset node, creating it (and its parents) the first time."""
    start_writing_offsets(zk, paths, offsets, keep_newer=False)()
