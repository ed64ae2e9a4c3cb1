"""Pipelined ZooKeeper reads: every read of one step is sent before any answer is awaited.

A reader queues reads with their callbacks, then `drain` sends them and hands each answer to its callback:
one round trip per step, whatever the number of nodes read in it. `KazooPipeline` does so with kazoo's
async calls; the fleet scan plugs in its own client (`migrator.fleet.zkwire`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.interfaces import IAsyncResult

DEFAULT_RESULT_TIMEOUT_S = 30.0

MISSING = object()
"""What a `ReadPipeline` hands a `children`/`get`/`exists`/`acls` callback for a node that does not exist."""


class ReadPipeline(Protocol):
    """Reads queued with their callbacks, sent and answered by `drain` (kazoo's async calls, or another client)."""

    def children(self, path: str, on_result: Callable[[Any], None]) -> None: ...

    def get(self, path: str, on_result: Callable[[Any], None]) -> None: ...

    def exists(self, path: str, on_result: Callable[[Any], None]) -> None: ...

    def drain(self) -> None: ...


@runtime_checkable
class AclReadPipeline(ReadPipeline, Protocol):
    """A `ReadPipeline` that also reads ACLs (kazoo's; the fleet scan's wire client does not)."""

    def acls(self, path: str, on_result: Callable[[Any], None]) -> None: ...


@runtime_checkable
class VersionedListingPipeline(ReadPipeline, Protocol):
    """A `ReadPipeline` that also lists children with their folder's stat (kazoo's `GetChildren2`, one request
    as a plain listing): the child version says whether a later listing missed a change."""

    def children_with_stat(self, path: str, on_result: Callable[[Any], None]) -> None: ...


def _wait(result: IAsyncResult, timeout_s: float) -> Any:
    """The result, or `MISSING` when the node vanished (a member left between two reads)."""
    try:
        return result.get(timeout=timeout_s)
    except NoNodeError:
        return MISSING


class KazooPipeline:
    """Issue many async reads, then wait on all of them and hand each result to its callback."""

    def __init__(self, zk: KazooClient, timeout_s: float) -> None:
        self._zk = zk
        self._timeout_s = timeout_s
        self._pending: list[tuple[IAsyncResult, Callable[[Any], None]]] = []

    def children(self, path: str, on_result: Callable[[Any], None]) -> None:
        self._pending.append((self._zk.get_children_async(path), on_result))

    def children_with_stat(self, path: str, on_result: Callable[[Any], None]) -> None:
        self._pending.append((self._zk.get_children_async(path, include_data=True), on_result))

    def get(self, path: str, on_result: Callable[[Any], None]) -> None:
        self._pending.append((self._zk.get_async(path), on_result))

    def exists(self, path: str, on_result: Callable[[Any], None]) -> None:
        self._pending.append((self._zk.exists_async(path), on_result))

    def acls(self, path: str, on_result: Callable[[Any], None]) -> None:
        self._pending.append((self._zk.get_acls_async(path), on_result))

    def drain(self) -> None:
        pending, self._pending = self._pending, []
        for result, on_result in pending:
            on_result(_wait(result, self._timeout_s))


def pipeline_of(source: KazooClient | ReadPipeline, timeout_s: float = DEFAULT_RESULT_TIMEOUT_S) -> ReadPipeline:
    """A `ReadPipeline` over kazoo's async calls for a client; another pipeline as it is."""
    return KazooPipeline(source, timeout_s) if isinstance(source, KazooClient) else source
