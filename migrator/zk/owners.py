"""Claiming and releasing `/consumers/<group>/owners/<topic>/<partition>`: the lock on a partition.

A claim's creates and a release's deletes go as ZooKeeper multi transactions (`TX_OPS` nodes each): one
transaction is one entry in ZooKeeper's log, where as many single requests are as many entries that its
write path handles one after another, and the survivors of a rebalance all write at the same moment. A
transaction is all or nothing, so one that fails (a node still there, a topic folder missing) is done again
node by node, pipelined (kazoo async), as if no transaction had been tried. A node that already holds our
own thread id counts as ours (CONTRACT §3 step 5).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.states import WatchedEvent

from migrator.assign.model import ThreadId
from migrator.protocol.partition import TopicPartition
from migrator.zk.paths import GroupPaths

TX_OPS = 200
"""Owner nodes per transaction: a few dozen kB, far under ZooKeeper's 1 MB request limit (jute.maxbuffer)."""


@dataclass(frozen=True, slots=True)
class ClaimResult:
    claimed: dict[TopicPartition, ThreadId] = field(default_factory=dict)
    conflicts: dict[TopicPartition, str] = field(default_factory=dict)  # partition -> current holder


def ensure_topic_parents(zk: KazooClient, paths: GroupPaths, topics: set[str]) -> None:
    for topic in sorted(topics):
        zk.ensure_path(paths.owners_topic(topic))


def claim(zk: KazooClient, paths: GroupPaths, wanted: Mapping[TopicPartition, ThreadId]) -> ClaimResult:
    """Create an ephemeral owner node for each partition; report the ones someone else holds.

    A node that already holds our thread id counts as ours (CONTRACT §3 step 5). If an earlier session
    created it (this consumer id restarted before that session expired), it is re-created under ours:
    adopted as it is, it would vanish when the old session expires while we keep processing.
    """
    claimed, existing, orphans = _create(zk, paths, wanted)
    if orphans:  # the topic's folder is not there yet (a new group, or one cleaned up): create it, then them
        ensure_topic_parents(zk, paths, {tp.topic for tp in orphans})
        more, more_existing, _ = _create(zk, paths, orphans)
        claimed |= more
        existing |= more_existing
    reads = {tp: zk.get_async(paths.owner(tp.topic, tp.partition)) for tp in existing}
    conflicts: dict[TopicPartition, str] = {}
    stale: dict[TopicPartition, int] = {}  # ours, from an earlier session: partition -> node version
    session = zk.client_id[0] if zk.client_id else None
    for tp, result in reads.items():
        try:
            data, stat = result.get()
        except NoNodeError:
            conflicts[tp] = ""  # released between our create and our read: the retry takes it
            continue
        holder = paths.decode_owner(data)
        if holder != existing[tp]:
            conflicts[tp] = holder
        elif stat.ephemeralOwner == session:
            claimed[tp] = existing[tp]
        else:
            stale[tp] = stat.version
    for tp, recreated in _recreate(zk, paths, {tp: (existing[tp], v) for tp, v in stale.items()}).items():
        if recreated:
            claimed[tp] = existing[tp]
        else:
            conflicts[tp] = ""  # someone was quicker: the retry sees who
    return ClaimResult(claimed, conflicts)


def _create(
    zk: KazooClient, paths: GroupPaths, wanted: Mapping[TopicPartition, ThreadId]
) -> tuple[dict[TopicPartition, ThreadId], dict[TopicPartition, ThreadId], dict[TopicPartition, ThreadId]]:
    """Create the owner nodes of `wanted` without first making sure of their topic's folder (one request per
    claim fewer): the ones created, the ones that exist already, the ones whose folder is missing. In
    transactions first; those of a transaction that failed, pipelined one by one."""
    created = _create_at_once(zk, paths, wanted)
    pending = {
        tp: zk.create_async(paths.owner(tp.topic, tp.partition), paths.encode_owner(thread), ephemeral=True)
        for tp, thread in wanted.items()
        if tp not in created
    }
    existing: dict[TopicPartition, ThreadId] = {}
    orphans: dict[TopicPartition, ThreadId] = {}
    for tp, result in pending.items():
        try:
            result.get()
            created[tp] = wanted[tp]
        except NodeExistsError:
            existing[tp] = wanted[tp]
        except NoNodeError:
            orphans[tp] = wanted[tp]
    return created, existing, orphans


def _create_at_once(
    zk: KazooClient, paths: GroupPaths, wanted: Mapping[TopicPartition, ThreadId]
) -> dict[TopicPartition, ThreadId]:
    """The owner nodes of `wanted` created by transactions of `TX_OPS` that committed."""

    def create(tx: TransactionRequest, tp: TopicPartition) -> None:
        tx.create(paths.owner(tp.topic, tp.partition), paths.encode_owner(wanted[tp]), ephemeral=True)

    sent = _send_in_transactions(zk, list(wanted), create)
    return {tp: wanted[tp] for batch, result in sent if _committed(result.get()) for tp in batch}


def _send_in_transactions(
    zk: KazooClient, tps: list[TopicPartition], add: Callable[[TransactionRequest, TopicPartition], None]
) -> list[tuple[list[TopicPartition], IAsyncResult]]:
    """Send one transaction per `TX_OPS` of `tps`, each with `add`'s operation for each of its partitions;
    each batch with its pending result (the per-operation outcomes)."""
    sent = []
    for batch in (tps[i : i + TX_OPS] for i in range(0, len(tps), TX_OPS)):
        tx = zk.transaction()
        for tp in batch:
            add(tx, tp)
        sent.append((batch, tx.commit_async()))
    return sent


def _committed(outcome: list[object]) -> bool:
    """Whether a transaction's per-operation results say it committed (kazoo returns, not raises, the errors)."""
    return not any(isinstance(result, Exception) for result in outcome)


def _recreate(
    zk: KazooClient, paths: GroupPaths, nodes: Mapping[TopicPartition, tuple[ThreadId, int]]
) -> dict[TopicPartition, bool]:
    """Delete (version-checked) and create again under this session; True where the new node is ours."""
    deletes = [
        zk.delete_async(paths.owner(tp.topic, tp.partition), version=version) for tp, (_, version) in nodes.items()
    ]
    for result in deletes:
        with contextlib.suppress(NoNodeError, BadVersionError):
            result.get()
    creates = {
        tp: zk.create_async(paths.owner(tp.topic, tp.partition), paths.encode_owner(thread), ephemeral=True)
        for tp, (thread, _) in nodes.items()
    }
    done: dict[TopicPartition, bool] = {}
    for tp, result in creates.items():
        try:
            result.get()
            done[tp] = True
        except NodeExistsError:
            done[tp] = False
    return done


def release(zk: KazooClient, paths: GroupPaths, owned: Mapping[TopicPartition, ThreadId], verify: bool = True) -> None:
    """Delete our owner nodes, leaving alone any node that holds someone else's thread id.

    `verify=False` skips reading each node first, for nodes this very session created: an ephemeral node
    cannot be replaced while the session that created it lives, and no member deletes another's node.
    """
    start_release(zk, paths, owned, verify)()


def start_release(
    zk: KazooClient, paths: GroupPaths, owned: Mapping[TopicPartition, ThreadId], verify: bool = True
) -> Callable[[], None]:
    """`release` up to sending the deletes (in transactions); the returned function waits for their replies.
    ZooKeeper applies one session's requests in order, so whatever this session sends later (a commit) comes
    after; the deletes of a transaction that failed (a node already gone) are sent one by one by the returned
    function, so it must have returned before this session creates any of these nodes again."""
    versions = {tp: -1 for tp in owned} if not verify else _versions_held(zk, paths, owned)

    def delete(tx: TransactionRequest, tp: TopicPartition) -> None:
        tx.delete(paths.owner(tp.topic, tp.partition), version=versions[tp])

    sent = _send_in_transactions(zk, list(versions), delete)

    def finish() -> None:
        failed = [tp for batch, result in sent if not _committed(result.get()) for tp in batch]
        deletes = [zk.delete_async(paths.owner(tp.topic, tp.partition), version=versions[tp]) for tp in failed]
        for result in deletes:
            with contextlib.suppress(NoNodeError):
                result.get()

    return finish


def _versions_held(
    zk: KazooClient, paths: GroupPaths, owned: Mapping[TopicPartition, ThreadId]
) -> dict[TopicPartition, int]:
    """The version of each owner node of `owned` that holds the thread id given for it (the others, gone or
    someone else's, are left out)."""
    reads = {tp: zk.get_async(paths.owner(tp.topic, tp.partition)) for tp in owned}
    versions: dict[TopicPartition, int] = {}
    for tp, result in reads.items():
        try:
            data, stat = result.get()
        except NoNodeError:
            continue
        if paths.decode_owner(data) == owned[tp]:
            versions[tp] = stat.version
    return versions


def rewrite(
    zk: KazooClient, paths: GroupPaths, moves: Mapping[TopicPartition, tuple[ThreadId, ThreadId]], verify: bool = True
) -> set[TopicPartition]:
    """Hand owner nodes from one of our threads to another in place ((old, new) per partition): the node
    never disappears, so no other member can claim the partition meanwhile. Returns the partitions whose
    node was gone or not ours (they must be claimed like any other). `verify=False`: see `release`."""
    held = {tp: old for tp, (old, _) in moves.items()}
    versions = {tp: -1 for tp in moves} if not verify else _versions_held(zk, paths, held)
    sets = {
        tp: zk.set_async(paths.owner(tp.topic, tp.partition), paths.encode_owner(moves[tp][1]), version=version)
        for tp, version in versions.items()
    }
    failed = set(moves) - set(sets)
    for tp, result in sets.items():
        try:
            result.get()
        except (NoNodeError, BadVersionError):
            failed.add(tp)
    return failed


def wait_until_released(
    zk: KazooClient,
    paths: GroupPaths,
    tps: list[TopicPartition],
    timeout_s: float,
    ours: Mapping[TopicPartition, ThreadId] | None = None,
) -> bool:
    """Wait (at most `timeout_s`) until none of `tps` has an owner node. Used as the rebalance back-off,
    so a claim retries as soon as the previous owner lets go instead of sleeping the full back-off.

    A node that already holds our own thread id (`ours`) is not waited for: it is a node an earlier
    session of this consumer left behind, and `claim` takes it over at once.
    """
    if not tps:
        return True
    ours = ours or {}
    gone = threading.Event()
    remaining = set(tps)
    lock = threading.Lock()

    def watcher_for(tp: TopicPartition):
        def on_event(event: WatchedEvent) -> None:
            if event.type == "DELETED":
                with lock:
                    remaining.discard(tp)
                    if not remaining:
                        gone.set()

        return on_event

    checks = {tp: zk.get_async(paths.owner(tp.topic, tp.partition), watch=watcher_for(tp)) for tp in tps}
    for tp, result in checks.items():
        try:
            holder = paths.decode_owner(result.get()[0])
        except NoNodeError:
            holder = None
        if holder is None or (tp in ours and holder == ours[tp]):
            with lock:
                remaining.discard(tp)
    with lock:
        if not remaining:
            return True
    return gone.wait(timeout_s)
