"""The commands' SIGINT handling without a cluster: kazoo's request path is guarded in one place, and a
second Ctrl-C while the first unwinds never replaces the first's message."""

from __future__ import annotations

import inspect
import signal
import threading
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from migrator.cli import interrupts


@pytest.fixture
def handler() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGINT)
    interrupts.install_interrupt_handler()
    yield
    signal.signal(signal.SIGINT, previous)


def test_kazoos_request_path_is_guarded_once_and_still_kazoos() -> None:
    original = inspect.unwrap(KazooClient._call)
    assert original is not KazooClient._call, "kazoo's KazooClient._call is no longer wrapped"
    assert original.__module__ == "kazoo.client"
    interrupts._guard_kazoo_requests()  # idempotent
    assert inspect.unwrap(KazooClient._call) is original


def test_a_signal_inside_kazoos_request_path_is_held_until_it_returns(
    handler: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C inside `_call` (whose bare `except:` would swallow it) raises only once `_call` returned."""
    finished: list[str] = []

    def request(_self: KazooClient, _request: object, _async: object) -> None:
        signal.raise_signal(signal.SIGINT)
        finished.append("queued")

    monkeypatch.setattr(KazooClient, "_call", request)
    interrupts._guard_kazoo_requests()
    with pytest.raises(KeyboardInterrupt):
        KazooClient._call(KazooClient.__new__(KazooClient), object(), object())
    assert finished == ["queued"]


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
