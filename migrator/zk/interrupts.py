"""Where a Ctrl-C must not land in a ZooKeeper call: while this thread queues a request in kazoo.

kazoo's client queues each request and wakes its connection thread inside a bare `except:`: a
KeyboardInterrupt raised there is swallowed, the request is failed with ConnectionClosedError although it was
sent, and the client can be left waiting for replies that no longer reach anyone. Waiting for a reply is
different: a KeyboardInterrupt there is safe, and is what stops a call blocked on an unreachable server.

So the client `migrator.zk.client.connect` returns is an `InterruptSafeClient`: each of kazoo's public calls
that queues a request (its `*_async` methods, which the blocking ones call before they wait, and a
transaction's `commit_async`) runs with this thread's "queueing a request" flag set, and a signal handler
asks `in_request_queueing()`. Only kazoo's public methods are overridden, each calling kazoo's own.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from kazoo.client import KazooClient, TransactionRequest

_P = ParamSpec("_P")
_R = TypeVar("_R")


class _Queueing(threading.local):
    """Per thread: how many request-queueing calls are in progress (they nest: `ensure_path_async` queues
    through `exists_async`)."""

    depth = 0


_queueing = _Queueing()


def in_request_queueing() -> bool:
    """Whether this thread is inside a kazoo call that queues a request (a signal handler must hold the
    signal), not waiting for a reply or outside kazoo (it may raise)."""
    return _queueing.depth > 0


def queueing_request(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """`method` run with this thread's "queueing a request" flag set."""

    @functools.wraps(method)
    def flagged(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        _queueing.depth += 1
        try:
            return method(*args, **kwargs)
        finally:
            _queueing.depth -= 1

    return flagged


class InterruptSafeTransaction(TransactionRequest):
    """kazoo's transaction whose commit queues its request under the flag."""

    commit_async = queueing_request(TransactionRequest.commit_async)


class InterruptSafeClient(KazooClient):
    """kazoo's client whose public calls queue their request under the flag; the blocking calls (`get`,
    `create`, ...) call these, then wait for the reply outside it."""

    add_auth_async = queueing_request(KazooClient.add_auth_async)
    sync_async = queueing_request(KazooClient.sync_async)
    create_async = queueing_request(KazooClient.create_async)
    ensure_path_async = queueing_request(KazooClient.ensure_path_async)
    exists_async = queueing_request(KazooClient.exists_async)
    get_async = queueing_request(KazooClient.get_async)
    get_children_async = queueing_request(KazooClient.get_children_async)
    get_acls_async = queueing_request(KazooClient.get_acls_async)
    set_acls_async = queueing_request(KazooClient.set_acls_async)
    set_async = queueing_request(KazooClient.set_async)
    delete_async = queueing_request(KazooClient.delete_async)
    reconfig_async = queueing_request(KazooClient.reconfig_async)

    def transaction(self) -> InterruptSafeTransaction:
        return InterruptSafeTransaction(self)
