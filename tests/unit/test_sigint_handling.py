"""The commands' SIGINT handling without a cluster: a Ctrl-C in kazoo's request queueing is held, one while
kazoo waits raises, and a second Ctrl-C while the first unwinds never replaces the first's message."""

from __future__ import annotations

import contextlib
import inspect
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import pytest
from kazoo.client import KazooClient

from migrator.cli import interrupts
from migrator.zk.interrupts import in_request_queueing


@pytest.fixture
def handler() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGINT)
    interrupts.install_interrupt_handler()
    yield
    signal.signal(signal.SIGINT, previous)


def _frame_in(code_of: Callable[..., object], call: Callable[[], object]) -> FrameType:
    """The frame of `code_of` as `call` runs it (a real frame of that code, for a handler to be given)."""
    frames: list[FrameType] = []

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call" and frame.f_code is code_of.__code__ and not frames:
            frames.append(frame)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    assert frames, f"{code_of.__qualname__} was not called"
    return frames[0]


def test_no_method_of_kazoo_is_replaced() -> None:
    for name, member in vars(KazooClient).items():
        if inspect.isfunction(member):
            assert not hasattr(member, "__wrapped__") and member.__module__ == "kazoo.client", name


def test_a_signal_landing_in_kazoos_request_queueing_is_held_then_raised(handler: None) -> None:
    """A Ctrl-C whose frame is kazoo's client code (a bare `except:` there would swallow it) returns from the
    handler and arrives again a moment later, outside it."""
    client = KazooClient(hosts="127.0.0.1:1")  # never started: the request fails at once, in the client's code
    queueing = _frame_in(KazooClient._call, lambda: client.exists_async("/"))
    interrupts.on_interrupt(signal.SIGINT, queueing)  # held: no KeyboardInterrupt here
    with pytest.raises(KeyboardInterrupt):
        time.sleep(5)


def _wait_briefly_for(result: Any) -> None:
    with contextlib.suppress(Exception):  # the handler's timeout: nobody answers
        result.get(timeout=0.01)


def test_only_kazoos_client_code_counts_as_queueing_a_request() -> None:
    """A call blocked on an unreachable server waits in kazoo's handlers: Ctrl-C must raise there."""
    client = KazooClient(hosts="127.0.0.1:1")
    result = client.handler.async_result()
    assert in_request_queueing(_frame_in(KazooClient._call, lambda: client.exists_async("/")))
    assert not in_request_queueing(_frame_in(type(result).get, lambda: _wait_briefly_for(result)))
    assert not in_request_queueing(sys._getframe())


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
