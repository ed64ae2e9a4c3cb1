"""Bulk writes of many small trees (synthetic fleets for tests and benchmarks): pipelined creates packed into
multi transactions, and pipelined deletion of whole subtrees."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from kazoo.exceptions import NodeExistsError, NoNodeError, NotEmptyError

from migrator.zk.session import ZkSession


class PipelinedCreates:
    """Pipelined creates: a whole tree level is queued before any answer is awaited.

    Creates are packed into ZooKeeper multi transactions of `TX_OPS` operations, so a level of thousands
    of nodes costs a few dozen requests (kazoo's per-request overhead, not ZooKeeper, bounds a Python
    writer). A transaction that fails (e.g. a node already exists: a re-run) is replayed one create at a
    time, tolerating existing nodes.
    """

    TX_OPS = 200

    def __init__(self, zk: ZkSession) -> None:
        self.zk = zk
        self.ops: list[tuple[str, bytes, bool]] = []
        self.pending: list[tuple[list[tuple[str, bytes, bool]], Any]] = []  # kazoo IAsyncResult (untyped)

    def create(self, path: str, data: bytes = b"", ephemeral: bool = False) -> None:
        self.ops.append((path, data, ephemeral))
        if len(self.ops) >= self.TX_OPS:
            self._send()

    def _send(self) -> None:
        if not self.ops:
            return
        tx = self.zk.transaction()
        for path, data, ephemeral in self.ops:
            tx.create(path, data, ephemeral=ephemeral)
        self.pending.append((self.ops, tx.commit_async()))
        self.ops = []

    def drain(self) -> None:
        self._send()
        pending, self.pending = self.pending, []
        retry: list[tuple[str, bytes, bool]] = []
        for ops, result in pending:
            outcome = result.get(timeout=60)
            if any(isinstance(r, Exception) for r in outcome):
                retry.extend(ops)
        singles = [self.zk.create_async(path, data, ephemeral=eph) for path, data, eph in retry]
        for single in singles:
            with contextlib.suppress(NodeExistsError):
                single.get(timeout=60)


def remove_trees(zk: ZkSession, roots: Iterable[str]) -> None:
    """Delete whole subtrees, pipelined (deepest nodes first); tolerant of nodes already gone."""
    levels: list[list[str]] = [list(roots)]
    while levels[-1]:
        results = [(path, zk.get_children_async(path)) for path in levels[-1]]
        children: list[str] = []
        for path, result in results:
            with contextlib.suppress(NoNodeError):
                children.extend(f"{path}/{c}" for c in result.get(timeout=60))
        levels.append(children)
    for level in reversed(levels):
        _delete_level(zk, level)


def _delete_level(zk: ZkSession, paths: list[str], tx_ops: int = 200) -> None:
    """Delete nodes of one depth in multi transactions; a failed one is replayed node by node."""
    batches = [paths[i : i + tx_ops] for i in range(0, len(paths), tx_ops)]
    pending = []
    for batch in batches:
        tx = zk.transaction()
        for path in batch:
            tx.delete(path)
        pending.append((batch, tx.commit_async()))
    retry = [
        path
        for batch, result in pending
        if any(isinstance(r, Exception) for r in result.get(timeout=60))
        for path in batch
    ]
    singles = [zk.delete_async(path) for path in retry]
    for single in singles:
        with contextlib.suppress(NoNodeError, NotEmptyError):
            single.get(timeout=60)
