"""A static embedded member (group.instance.id): what librdkafka's errors mean for it, and how it rides out a
lost assignment without getting itself fenced (librdkafka makes FENCED_INSTANCE_ID fatal to the client)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError
from hypothesis import given
from hypothesis import strategies as st

from migrator.kafka import member as member_module
from migrator.kafka.group_errors import GroupFault, group_fault_of
from migrator.kafka.member import EmbeddedMember
from migrator.protocol.events import Event, KafkaLost, KafkaRevoked
from migrator.protocol.partition import TopicPartition

INSTANCE = "g_b1"
_NAMED = {KafkaError.FENCED_INSTANCE_ID, KafkaError._FATAL, KafkaError.INCONSISTENT_GROUP_PROTOCOL,
          KafkaError._ALL_BROKERS_DOWN, KafkaError.GROUP_MAX_SIZE_REACHED}  # fmt: skip


def test_a_fenced_instance_is_fenced_whether_reported_by_its_code_or_as_the_fatal_error_it_becomes() -> None:
    assert group_fault_of(KafkaError.FENCED_INSTANCE_ID, static=True) is GroupFault.FENCED
    assert group_fault_of(KafkaError._FATAL, static=True) is GroupFault.FENCED
    assert group_fault_of(KafkaError._FATAL, static=False) is GroupFault.UNAVAILABLE  # not a group.instance.id
    assert group_fault_of(KafkaError.GROUP_MAX_SIZE_REACHED, static=True) is GroupFault.UNAVAILABLE
    assert group_fault_of(KafkaError._ALL_BROKERS_DOWN, static=True) is GroupFault.NO_BROKER
    assert group_fault_of(KafkaError.INCONSISTENT_GROUP_PROTOCOL, static=False) is GroupFault.DISAGREEMENT


@given(st.integers(-200, 120).filter(lambda c: c not in _NAMED), st.booleans())
def test_every_other_error_passes(code: int, static: bool) -> None:
    assert group_fault_of(code, static=static) is GroupFault.PASSING


@pytest.fixture
def events() -> list[Event]:
    return []


@pytest.fixture
def member(events: list[Event]) -> Iterator[EmbeddedMember]:
    # never started and never reachable: the client only exists for the callbacks under test
    conf = {"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "group.instance.id": INSTANCE}
    m = EmbeddedMember(conf, 1000, events.append)
    yield m
    m.close()


def test_a_fenced_static_member_says_so_once_naming_its_instance_id(
    member: EmbeddedMember, events: list[Event], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger=member_module.__name__)
    member._on_error(KafkaError(KafkaError._FATAL, "Fatal error: fenced"))
    member._on_error(KafkaError(KafkaError._FATAL, "Fatal error: fenced"))  # the poll reports it again
    lost = [e for e in events if isinstance(e, KafkaLost)]
    assert len(lost) == 1 and repr(INSTANCE) in lost[0].reason and not lost[0].connection
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and repr(INSTANCE) in errors[0].getMessage()


def test_a_static_member_that_lost_its_assignment_neither_waits_for_the_release_nor_commits(
    member: EmbeddedMember, events: list[Event], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """librdkafka heartbeats with its reset member id while the lost callback runs, and a commit carries it
    too: for a static member the broker answers both with FENCED_INSTANCE_ID, fatal to the client."""
    committed: list[object] = []
    monkeypatch.setattr(member_module, "commit_sync", lambda _consumer, offsets: committed.append(offsets) or set())
    monkeypatch.setattr(member_module, "REVOKE_WAIT_S", 0.0)  # a callback that waits gives up at once, loudly
    caplog.set_level(logging.ERROR, logger=member_module.__name__)
    member._on_revoke(member._consumer, [], lost=True)
    (revoked,) = [e for e in events if isinstance(e, KafkaRevoked)]
    assert revoked.lost and not revoked.done.done()  # the worker releases after the callback returned
    assert not [r for r in caplog.records if "did not release" in r.getMessage()]
    assert member.commit({TopicPartition("t", 0): 5}, timeout_s=1.0) == set()
    assert committed == []
