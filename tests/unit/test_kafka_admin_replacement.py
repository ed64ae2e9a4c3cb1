"""The Kafka adapter's client replacement (`migrator.kafka.admin`), driven through a stand-in AdminClient.

The real-cluster side (a coordinator that moves back to a restarted broker, seen through fleet apply) is
tests/integration/test_fleet_coordinator_moves.py; here each path is pinned without a cluster.
"""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterator
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from migrator.kafka.admin import KafkaAdmin, KafkaTimedOut, KafkaUnavailable, NotCoordinator

DESCRIPTION = SimpleNamespace(members=[], state=SimpleNamespace(name="STABLE"), partition_assignor="range")


class Client:
    """A stand-in AdminClient whose DescribeConsumerGroups answers each group as `answers` says."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.requests: list[list[str]] = []

    def describe_consumer_groups(self, groups: list[str], request_timeout: float) -> dict[str, Future[Any]]:
        self.requests.append(list(groups))
        futures: dict[str, Future[Any]] = {}
        for group in groups:
            future: Future[Any] = Future()
            answer = self.answers.get(group, DESCRIPTION)
            if isinstance(answer, int):
                future.set_exception(KafkaException(KafkaError(answer)))
            elif answer is not None:  # None: never answered
                future.set_result(answer)
            futures[group] = future
        return futures

    def poll(self, _timeout: float) -> int:
        return 0


class Factory:
    """Hands out the prepared clients in order, and records how many were made."""

    def __init__(self, *clients: Client) -> None:
        self.clients = list(clients)
        self.made: list[Client] = []

    def __call__(self, _conf: dict[str, Any]) -> Client:
        client = self.clients.pop(0)
        self.made.append(client)
        return client


def admin(factory: Factory, timeout_s: float = 1.0) -> KafkaAdmin:
    return KafkaAdmin("localhost:9", timeout_s=timeout_s, client_factory=factory)


def test_not_coordinator_makes_the_next_coordinator_request_use_a_new_client() -> None:
    stale, fresh = Client({"g": KafkaError.NOT_COORDINATOR}), Client({})
    factory = Factory(stale, fresh)
    kafka = admin(factory)
    with pytest.raises(NotCoordinator):
        kafka.describe_group("g")
    assert factory.made == [stale]  # not retried at once: the caller asks again on its own clock
    assert kafka.describe_group("g").stable
    assert factory.made == [stale, fresh] and fresh.requests == [["g"]]


def test_an_unanswered_coordinator_request_replaces_the_client_at_once() -> None:
    hanging, fresh = Client({"g": None}), Client({})
    factory = Factory(hanging, fresh)
    kafka = admin(factory, timeout_s=0.05)
    with pytest.raises(KafkaTimedOut):
        kafka.describe_group("g")
    assert factory.made == [hanging, fresh]
    assert kafka.describe_group("g").group_id == "g"


def test_other_errors_keep_the_client() -> None:
    only = Client({"g": KafkaError.GROUP_AUTHORIZATION_FAILED})
    factory = Factory(only)
    kafka = admin(factory)
    for _ in range(2):
        with pytest.raises(KafkaUnavailable) as raised:
            kafka.describe_group("g")
        assert type(raised.value) is KafkaUnavailable and raised.value.code == KafkaError.GROUP_AUTHORIZATION_FAILED
    assert factory.made == [only]


def test_a_batch_reports_each_group_and_one_moved_coordinator_replaces_the_client() -> None:
    stale, fresh = Client({"b": KafkaError.NOT_COORDINATOR}), Client({})
    factory = Factory(stale, fresh)
    kafka = admin(factory)
    first = kafka.describe_groups(["a", "b", "c"])
    assert isinstance(first["b"], NotCoordinator)
    assert all(getattr(first[g], "group_id", None) == g for g in ("a", "c"))
    second = kafka.describe_groups(["a", "b", "c"])
    assert factory.made == [stale, fresh]
    assert all(getattr(second[g], "group_id", None) == g for g in ("a", "b", "c"))


def test_a_closed_adapter_refuses_requests() -> None:
    kafka = admin(Factory(Client({})))
    kafka.close()
    with pytest.raises(KafkaUnavailable):
        kafka.describe_group("g")
    with pytest.raises(KafkaUnavailable):
        kafka.topics()


@pytest.fixture
def no_cyclic_gc() -> Iterator[None]:
    """Only reference counting frees objects meanwhile: what the collector would free later, on any thread,
    stays."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize("first_answer", [None, KafkaError.NOT_COORDINATOR], ids=["unanswered", "not coordinator"])
def test_a_replaced_client_is_destroyed_once_the_request_that_replaced_it_returns(
    no_cyclic_gc: None, first_answer: int | None
) -> None:
    """Destroying a client can block, so it must happen right after the request that replaced it, and never
    later inside a garbage collection on whatever thread allocates (e.g. a fetch thread holding its poll lock).
    One whose request is still pending can block until that request's own timeout: it is destroyed on a thread
    of its own, never the caller's. The errors handed out, kept by their caller, must not keep it alive."""
    made: list[weakref.ref[Client]] = []
    destroyed_on: list[threading.Thread] = []

    def factory(_conf: dict[str, Any]) -> Client:
        client = Client({"g": first_answer} if not made else {})
        made.append(weakref.ref(client))
        weakref.finalize(client, lambda: destroyed_on.append(threading.current_thread()))
        return client

    kafka = KafkaAdmin("localhost:9", timeout_s=0.05, client_factory=factory)
    with pytest.raises(KafkaUnavailable) as raised:
        kafka.describe_group("g")
    kept = raised.value  # an error the caller holds on to
    kafka.describe_group("g")  # after NOT_COORDINATOR the replacement happens at the next coordinator request
    deadline = time.monotonic() + 5
    while made[0]() is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(made) == 2 and made[0]() is None, f"the replaced client outlived the request that failed ({kept})"
    if first_answer is None:
        assert destroyed_on and destroyed_on[0] is not threading.current_thread()
