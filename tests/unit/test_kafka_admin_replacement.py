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
from hypothesis import given
from hypothesis import strategies as st

from migrator.kafka.admin import (
    KafkaAdmin,
    KafkaTimedOut,
    KafkaUnavailable,
    NotCoordinator,
    fresh_client_reason,
    lost_a_broker,
)

DESCRIPTION = SimpleNamespace(members=[], state=SimpleNamespace(name="STABLE"), partition_assignor="range")


class Client:
    """A stand-in AdminClient whose DescribeConsumerGroups answers each group as `answers` says, and whose next
    poll hands the errors `reports` to its `error_cb`, as librdkafka hands a client's errors over."""

    def __init__(
        self, answers: dict[str, Any], reports: tuple[int, ...] = (), brokers: tuple[set[int], ...] = ()
    ) -> None:
        self.answers = answers
        self.requests: list[list[str]] = []
        self.reports = list(reports)
        self.error_cb: Any = None
        self.brokers = list(brokers)  # what each metadata request lists, in turn

    def list_topics(self, topic: str | None, timeout: float) -> Any:
        return SimpleNamespace(brokers={b: None for b in self.brokers.pop(0)}, topics={})

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
        reports, self.reports = self.reports, []
        for code in reports:
            self.error_cb(KafkaError(code))
        return 0


class Factory:
    """Hands out the prepared clients in order, and records how many were made."""

    def __init__(self, *clients: Client) -> None:
        self.clients = list(clients)
        self.made: list[Client] = []

    def __call__(self, conf: dict[str, Any]) -> Client:
        client = self.clients.pop(0)
        client.error_cb = conf["error_cb"]
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


@pytest.mark.parametrize("report", [KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN], ids=["transport", "all down"])
def test_a_lost_broker_connection_makes_the_next_coordinator_request_use_a_new_client(report: int) -> None:
    """A broker that left the metadata and came back can leave the client routing to a handle that never
    connects again: the client that reported losing a broker is not trusted with a coordinator request."""
    lost, fresh = Client({}, reports=(report,)), Client({})
    factory = Factory(lost, fresh)
    kafka = admin(factory)
    assert kafka.describe_group("g").stable  # the request that saw the loss is answered by the same client
    assert factory.made == [lost]
    assert kafka.describe_group("g").stable
    assert factory.made == [lost, fresh] and fresh.requests == [["g"]]
    kafka.describe_group("g")
    assert factory.made == [lost, fresh]  # the new client reported nothing: it stays


def test_a_broker_missing_from_later_metadata_makes_the_next_coordinator_request_use_a_new_client() -> None:
    """librdkafka drops a broker that leaves the metadata; no error says so when its connection was idle."""
    lost, fresh = Client({}, brokers=({1, 2, 3}, {1, 3}, {1, 2, 3})), Client({})
    factory = Factory(lost, fresh)
    kafka = admin(factory)
    kafka.topics()
    kafka.describe_group("g")
    assert factory.made == [lost]
    kafka.topics()  # broker 2 is gone ...
    kafka.topics()  # ... and back: the client may still route to the handle it dropped
    kafka.describe_group("g")
    assert factory.made == [lost, fresh] and fresh.requests == [["g"]]


def test_metadata_that_keeps_every_broker_keeps_the_client() -> None:
    only = Client({}, brokers=({1, 2}, {1, 2, 3}, {1, 2, 3}))
    factory = Factory(only)
    kafka = admin(factory)
    for _ in range(3):
        kafka.topics()
        kafka.describe_group("g")
    assert factory.made == [only]


@given(known=st.frozensets(st.integers(0, 5)), listed=st.frozensets(st.integers(0, 5)))
def test_a_broker_is_lost_exactly_when_one_known_is_not_listed(known: frozenset[int], listed: frozenset[int]) -> None:
    assert lost_a_broker(known, listed) == any(b not in listed for b in known)


def test_other_reported_errors_keep_the_client() -> None:
    only = Client({}, reports=(KafkaError._AUTHENTICATION, KafkaError._RESOLVE))
    factory = Factory(only)
    kafka = admin(factory)
    for _ in range(2):
        kafka.describe_group("g")
    assert factory.made == [only]


@given(not_coordinator=st.booleans(), broker_lost=st.booleans())
def test_a_new_client_is_due_exactly_when_the_coordinator_moved_or_a_broker_was_lost(
    not_coordinator: bool, broker_lost: bool
) -> None:
    reason = fresh_client_reason(not_coordinator, broker_lost)
    assert (reason is not None) == (not_coordinator or broker_lost)


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
