"""The demo's plain consumer commits as an application does: a commit refused because the group moved past the
member (a rebalance it missed) drops those offsets and the consumer goes on; any other failure stops it."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from migrator.demo.workload import PlainConsumer
from migrator.observe import ProcessingLog


class _Refusing:
    def __init__(self, code: int) -> None:
        self.code = code
        self.commits = 0

    def commit(self, **_: Any) -> None:
        self.commits += 1
        raise KafkaException(KafkaError(self.code))


def _consumer() -> PlainConsumer:
    plain = PlainConsumer("127.0.0.1:1", "g", "t", ProcessingLog(), "p0")  # never started: nothing connects
    plain._processed[("t", 0)] = 5
    return plain


@pytest.mark.parametrize(
    "code", [KafkaError.ILLEGAL_GENERATION, KafkaError.UNKNOWN_MEMBER_ID, KafkaError.REBALANCE_IN_PROGRESS]
)
def test_a_commit_refused_for_a_lost_generation_drops_the_offsets_and_consumes_on(code: int) -> None:
    plain, refusing = _consumer(), _Refusing(code)
    plain._commit(refusing)  # type: ignore[arg-type]
    assert refusing.commits == 1 and plain._processed == {}


def test_any_other_commit_failure_stops_the_consumer() -> None:
    plain = _consumer()
    with pytest.raises(KafkaException):
        plain._commit(_Refusing(KafkaError.GROUP_AUTHORIZATION_FAILED))  # type: ignore[arg-type]
