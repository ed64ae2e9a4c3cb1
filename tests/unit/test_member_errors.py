"""The embedded member's error callback: librdkafka's repeated reconnect failures make one line, not a flood."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError

from migrator.kafka.member import EmbeddedMember
from migrator.logs import LIBRDKAFKA_LOGGER, RepeatFilter

REFUSED = (
    "127.0.0.1:{port}/bootstrap: Connect to ipv4#127.0.0.1:{port} failed: "
    "Connection refused (after 0ms in state CONNECT)"
)


@pytest.fixture
def member(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddedMember]:
    # a fresh filter: conditions other tests of this process logged must not count here
    monkeypatch.setattr(logging.getLogger(LIBRDKAFKA_LOGGER), "filters", [RepeatFilter()])
    # never started and never reachable: the client only exists for the callback under test
    m = EmbeddedMember({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}, 1000, lambda _event: None)
    yield m
    m.close()


def test_repeated_transport_errors_log_one_line(member: EmbeddedMember, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LIBRDKAFKA_LOGGER)
    for _ in range(200):  # what librdkafka reports in ten seconds of a broker down during a rebalance
        member._on_error(KafkaError(KafkaError._TRANSPORT, REFUSED.format(port=25707)))
    lines = [r for r in caplog.records if "Connection refused" in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].name == LIBRDKAFKA_LOGGER


def test_a_different_error_still_gets_its_line(member: EmbeddedMember, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LIBRDKAFKA_LOGGER)
    member._on_error(KafkaError(KafkaError._TRANSPORT, REFUSED.format(port=25708)))
    member._on_error(KafkaError(KafkaError._RESOLVE, "broker.example: Failed to resolve"))
    assert any("Failed to resolve" in r.getMessage() for r in caplog.records)
