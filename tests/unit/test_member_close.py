"""An embedded member that was built but never started still closes its client when it is closed."""

from __future__ import annotations

from confluent_kafka import Consumer

from migrator.kafka.member import EmbeddedMember
from tests.helpers.wait import wait_until


def _closed(client: Consumer) -> bool:
    try:
        client.assignment()
    except RuntimeError:  # confluent-kafka: "Consumer closed"
        return True
    return False


def test_a_member_never_started_closes_its_client() -> None:
    member = EmbeddedMember({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}, 1000, lambda _event: None)
    client = member._consumer
    member.close()
    wait_until(lambda: _closed(client), 10, what="the never-started member's client closed")
