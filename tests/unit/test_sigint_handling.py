"""The commands' SIGINT handling without a cluster: a Ctrl-C while kazoo queues a request is held, one while
kazoo waits for a reply raises, every public kazoo call that queues a request flags it, and a second Ctrl-C
while the first unwinds never replaces the first's message."""

from __future__ import annotations

import ast
import contextlib
import inspect
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kazoo.client
import pytest
from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import ConnectionClosedError

import migrator
from migrator.cli import interrupts
from migrator.zk.interrupts import InterruptSafeClient, InterruptSafeTransaction, in_request_queueing


@pytest.fixture
def handler() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGINT)
    interrupts.install_interrupt_handler()
    yield
    signal.signal(signal.SIGINT, previous)


def test_no_method_of_kazoo_is_replaced() -> None:
    for name, member in vars(KazooClient).items():
        if inspect.isfunction(member):
            assert not hasattr(member, "__wrapped__") and member.__module__ == "kazoo.client", name


# --- every public way into kazoo's request queueing (`_call`) is flagged ------------------------------------


def _is_public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _calls_of(method: ast.FunctionDef) -> tuple[bool, set[str]]:
    """Whether the method's code (nested functions included) calls `_call` on anything, and which methods of
    its own class it calls (`self.x(...)`)."""
    queues, own = False, set()
    for node in ast.walk(method):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            queues |= node.func.attr == "_call"
            if isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
                own.add(node.func.attr)
    return queues, own


def _public_paths_to_queueing(kazoo_class: type, flagged: set[str]) -> set[str]:
    """The public methods of a class in kazoo's client module that reach `_call` without passing through one
    of the `flagged` methods (read from kazoo's source)."""
    tree = ast.parse(inspect.getsource(kazoo.client))
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == kazoo_class.__name__).body
    calls = {m.name: _calls_of(m) for m in body if isinstance(m, ast.FunctionDef)}
    reaching = {name for name, (queues, _) in calls.items() if queues and name not in flagged}
    grown = True
    while grown:
        more = {n for n, (_, own) in calls.items() if n not in flagged and own & reaching} - reaching
        reaching |= more
        grown = bool(more)
    return {name for name in reaching if _is_public(name)}


def _overrides(safe_class: type) -> set[str]:
    return {name for name, member in vars(safe_class).items() if callable(member)}


def test_the_source_reading_finds_kazoos_public_calls_that_queue_requests() -> None:
    """Without any flagged method, the blocking and async calls reach `_call`: the reading below sees them."""
    unflagged = _public_paths_to_queueing(KazooClient, set())
    assert {"get", "get_async", "create", "ensure_path", "delete", "sync", "start"} <= unflagged
    assert _public_paths_to_queueing(TransactionRequest, set()) >= {"commit", "commit_async", "__exit__"}


@pytest.mark.parametrize(
    ("kazoo_class", "safe_class"),
    [(KazooClient, InterruptSafeClient), (TransactionRequest, InterruptSafeTransaction)],
)
def test_every_public_call_that_queues_a_request_passes_a_flagged_method(kazoo_class: type, safe_class: type) -> None:
    """A kazoo upgrade that adds a public method reaching `_call` another way fails here."""
    assert _public_paths_to_queueing(kazoo_class, _overrides(safe_class)) == set()


_FLAGGED_CALLS: dict[str, Callable[[KazooClient], object]] = {
    "add_auth_async": lambda zk: zk.add_auth_async("digest", "ops:secret"),
    "sync_async": lambda zk: zk.sync_async("/"),
    "create_async": lambda zk: zk.create_async("/a", makepath=True),
    "ensure_path_async": lambda zk: zk.ensure_path_async("/a/b"),
    "exists_async": lambda zk: zk.exists_async("/a"),
    "get_async": lambda zk: zk.get_async("/a"),
    "get_children_async": lambda zk: zk.get_children_async("/a"),
    "get_acls_async": lambda zk: zk.get_acls_async("/a"),
    "set_acls_async": lambda zk: zk.set_acls_async("/a", []),
    "set_async": lambda zk: zk.set_async("/a", b"v"),
    "delete_async": lambda zk: zk.delete_async("/a"),
    "reconfig_async": lambda zk: zk.reconfig_async(None, None, "server.1=h:1:2", -1),
    "transaction": lambda zk: zk.transaction().commit_async(),
}


def _recording_queueing(zk: KazooClient, on_queue: Callable[[], None] = lambda: None) -> list[bool]:
    """Whether the flag was set at each request `zk` queued; `on_queue` runs inside kazoo's queueing."""
    seen: list[bool] = []
    queue = zk._call

    def recorded(request: Any, async_object: Any) -> Any:
        seen.append(in_request_queueing())
        on_queue()
        return queue(request, async_object)

    zk._call = recorded
    return seen


def test_every_flagged_call_is_tried_below() -> None:
    assert set(_FLAGGED_CALLS) == _overrides(InterruptSafeClient)


@pytest.mark.parametrize("name", sorted(_FLAGGED_CALLS))
def test_each_flagged_call_queues_its_request_under_the_flag(name: str) -> None:
    zk = InterruptSafeClient(hosts="127.0.0.1:1")  # never started: each request fails at once, once queued
    seen = _recording_queueing(zk)
    _FLAGGED_CALLS[name](zk)
    assert seen and all(seen), seen
    assert not in_request_queueing()


def _called_name(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    return node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)


def _kazoo_clients_built_in(source: Path) -> list[str]:
    tree = ast.parse(source.read_text())
    return [f"{source}:{node.lineno}" for node in ast.walk(tree) if _called_name(node) == "KazooClient"]


def test_migrator_builds_no_client_that_leaves_its_request_queueing_unflagged() -> None:
    """Every command runs under the SIGINT handler: a bare `KazooClient` there could swallow a Ctrl-C."""
    package = Path(migrator.__file__).parent
    assert [where for source in sorted(package.rglob("*.py")) for where in _kazoo_clients_built_in(source)] == []


# --- the handler ------------------------------------------------------------------------------------------


def test_a_signal_landing_in_kazoos_request_queueing_is_held_then_raised(
    handler: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C inside `_call` (a bare `except:` there would swallow it) returns from the handler; the request
    is queued whole, and the signal arrives again a moment later, outside it."""
    monkeypatch.setattr(interrupts, "REDELIVER_S", 0.2)  # a loaded host does not deliver it before the sleep
    zk = InterruptSafeClient(hosts="127.0.0.1:1")
    seen = _recording_queueing(zk, on_queue=lambda: signal.raise_signal(signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):
        try:
            result = zk.exists_async("/")
        except KeyboardInterrupt:
            pytest.fail("the interrupt was raised inside kazoo's request queueing")
        time.sleep(5)
    assert seen == [True] and isinstance(result.exception, ConnectionClosedError)


def _timer(delay_s: float, action: Callable[..., object], *args: object) -> threading.Timer:
    timer = threading.Timer(delay_s, action, args)
    timer.daemon = True
    timer.start()
    return timer


def test_a_call_waiting_for_its_reply_is_interrupted_at_once(handler: None) -> None:
    """A call blocked on a server that never answers: Ctrl-C raises in the wait, not when the call ends."""
    zk = InterruptSafeClient(hosts="127.0.0.1:1")
    closing: list[threading.Timer] = []

    def queued_unanswered(_request: Any, async_object: Any) -> None:
        _timer(0.05, os.kill, os.getpid(), signal.SIGINT)  # to the process, as a terminal sends it
        closing.append(_timer(3, async_object.set_exception, ConnectionClosedError("closed unanswered")))

    zk._call = queued_unanswered
    t0 = time.monotonic()
    try:
        zk.get("/a")
        outcome = "answered"
    except KeyboardInterrupt:
        outcome = "interrupted"
    except ConnectionClosedError:
        outcome = "closed unanswered"
        with contextlib.suppress(KeyboardInterrupt):
            time.sleep(0.5)  # where a signal held through the wait arrives
    finally:
        for timer in closing:
            timer.cancel()
    assert outcome == "interrupted" and time.monotonic() - t0 < 1


def test_a_second_interrupt_while_the_first_unwinds_is_ignored(handler: None) -> None:
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    signal.raise_signal(signal.SIGINT)  # as `timeout -s INT` does: the child, then its process group


def test_each_command_run_starts_with_a_fresh_count(handler: None) -> None:
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    interrupts.install_interrupt_handler()
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)


def test_a_deferred_write_delivers_its_interrupt_once_to_the_handler(handler: None) -> None:
    with pytest.raises(KeyboardInterrupt), interrupts.interrupts_deferred():
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)
    assert threading.current_thread() is threading.main_thread()
    signal.raise_signal(signal.SIGINT)  # counted as the second: ignored
