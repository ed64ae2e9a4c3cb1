"""A static embedded member (group.instance.id): what librdkafka's errors mean for it, and how it rides out a
lost assignment without getting itself fenced (librdkafka makes FENCED_INSTANCE_ID fatal to the client)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping

import pytest
from confluent_kafka import KafkaError
from hypothesis import given
from hypothesis import strategies as st

from migrator.kafka import member as member_module
from migrator.kafka.commit import CommitWithheld
from migrator.kafka.group_errors import CommitBar, GroupFault, commit_bar, group_fault_of
from migrator.kafka.member import EmbeddedMember
from migrator.kafka.stranding import ClientStatistics, statistics_of
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


def commits_sent(monkeypatch: pytest.MonkeyPatch) -> list[Mapping[TopicPartition, int]]:
    """The commits the member hands librdkafka from now on (none of them is sent)."""
    sent: list[Mapping[TopicPartition, int]] = []

    def send(_consumer: object, offsets: Mapping[TopicPartition, int]) -> set[TopicPartition]:
        sent.append(offsets)
        return set()

    monkeypatch.setattr(member_module, "member_commit_sync", send)
    return sent


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
    committed = commits_sent(monkeypatch)
    monkeypatch.setattr(member_module, "REVOKE_WAIT_S", 0.0)  # a callback that waits gives up at once, loudly
    caplog.set_level(logging.ERROR, logger=member_module.__name__)
    member._on_revoke(member._consumer, [], lost=True)
    (revoked,) = [e for e in events if isinstance(e, KafkaRevoked)]
    assert revoked.lost and not revoked.done.done()  # the worker releases after the callback returned
    assert not [r for r in caplog.records if "did not release" in r.getMessage()]
    with pytest.raises(CommitWithheld):
        member.commit({TopicPartition("t", 0): 5}, timeout_s=1.0)
    assert committed == []


def statistics(group_state: str, broker_state: str) -> str:
    """A librdkafka statistics report, cut down to what the member reads."""
    broker = {"name": "127.0.0.1:9092/1", "source": "learned", "state": broker_state, "connects": 1}
    return json.dumps({"brokers": {broker["name"]: broker}, "cgrp": {"state": group_state}})


def test_a_static_member_withholds_commits_from_no_broker_until_its_coordinator_is_up_again(
    member: EmbeddedMember, monkeypatch: pytest.MonkeyPatch
) -> None:
    """librdkafka holds a commit for an unreachable coordinator longer than the session lasts, then sends it
    with the reset member id: a static member must not hand it one then (and refuses as for the generation,
    so the offsets wait for its next commit)."""
    committed = commits_sent(monkeypatch)
    client = 1  # the member's first client, its current one
    member._on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    for report in (None, statistics("wait-broker-transport", "DOWN"), statistics("query-coord", "UP")):
        if report is not None:
            member._on_statistics(client, report)
        with pytest.raises(CommitWithheld) as withheld:
            member.commit({TopicPartition("t", 0): 5}, timeout_s=1.0)
        assert withheld.value.code == KafkaError._WAIT_COORD
    member._on_statistics(client, statistics("up", "CONNECT"))  # its real brokers still reconnecting
    with pytest.raises(CommitWithheld) as withheld:  # the coordinator is back; this client never had a member id
        member.commit({TopicPartition("t", 0): 5}, timeout_s=1.0)
    assert withheld.value.code == KafkaError._ASSIGNMENT_LOST
    assert committed == []


@given(st.booleans(), st.booleans(), st.booleans())
def test_only_a_member_with_a_generation_commits_and_a_static_one_only_to_a_coordinator_that_is_up(
    generation: bool, static: bool, coordinator_up: bool
) -> None:
    bar = commit_bar(generation=generation, static=static, coordinator_up=coordinator_up)
    assert (bar is None) == (generation and (coordinator_up or not static))
    assert (bar is CommitBar.NO_COORDINATOR) == (static and not coordinator_up)


def test_statistics_show_the_coordinator_up_exactly_while_the_group_is_up() -> None:
    """The coordinator's connection is librdkafka's logical handle, not one of the real brokers: a group `up`
    while they reconnect (just after a broker's return) has its coordinator."""
    assert statistics_of(statistics("up", "UP")).coordinator_up is True
    assert statistics_of(statistics("up", "CONNECT")).coordinator_up is True
    assert statistics_of(statistics("query-coord", "UP")).coordinator_up is False
    assert statistics_of(statistics("wait-coord", "UP")).coordinator_up is False
    assert statistics_of(json.dumps({"brokers": {}})).coordinator_up is None  # not a group member's
    assert statistics_of("not json") == statistics_of("[]") == ClientStatistics(None, None)


def test_a_static_member_without_statistics_does_not_withhold_for_a_coordinator_it_could_not_see_return() -> None:
    events: list[Event] = []
    conf = {"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "group.instance.id": INSTANCE,
            "statistics.interval.ms": "0"}  # fmt: skip
    member = EmbeddedMember(conf, 1000, events.append)
    try:
        member._on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
        with pytest.raises(CommitWithheld) as withheld:  # for its generation only: it never joined
            member.commit({TopicPartition("t", 0): 5}, timeout_s=1.0)
        assert withheld.value.code == KafkaError._ASSIGNMENT_LOST
    finally:
        member.close()
