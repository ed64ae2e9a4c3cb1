"""Synchronous Kafka offset commits that report which partitions the broker accepted."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from migrator.protocol.partition import TopicPartition

log = logging.getLogger(__name__)

GENERATION_MOVED_CODES = frozenset(
    {KafkaError.ILLEGAL_GENERATION, KafkaError.UNKNOWN_MEMBER_ID, KafkaError.REBALANCE_IN_PROGRESS}
)
"""The answers to a member's commit that mean the group has moved past the generation it was sent with."""


class GenerationMoved(Exception):
    """Kafka refused a group member's commit because the group has moved past the member's generation (a
    rebalance began, or the member was removed): no retry succeeds before the member's next assignment, and
    a member that waits for one holds up its part of the rebalance."""

    def __init__(self, code: int) -> None:
        super().__init__(f"Kafka refused the commit for the group's generation ({KafkaError(code).name()})")
        self.code = code


def commit_sync(consumer: Consumer, offsets: Mapping[TopicPartition, int]) -> set[TopicPartition]:
    """Commit `offsets` (next offsets) and return the accepted partitions; a refused commit returns none."""
    accepted, _ = _commit(consumer, offsets)
    return accepted


def member_commit_sync(consumer: Consumer, offsets: Mapping[TopicPartition, int]) -> set[TopicPartition]:
    """`commit_sync` with a group member's generation: `GenerationMoved` when Kafka refused it for that
    generation, so the caller does not retry what cannot succeed before the next assignment."""
    accepted, refusal = _commit(consumer, offsets)
    if not accepted and refusal in GENERATION_MOVED_CODES:
        raise GenerationMoved(refusal)
    return accepted


def _commit(consumer: Consumer, offsets: Mapping[TopicPartition, int]) -> tuple[set[TopicPartition], int | None]:
    """The accepted partitions, and the code of a refusal (the request's, else the first partition's)."""
    if not offsets:
        return set(), None
    tps = [KafkaTopicPartition(t, p, o) for (t, p), o in offsets.items()]
    try:
        result = consumer.commit(offsets=tps, asynchronous=False)
    except KafkaException as exc:
        log.info("Kafka offset commit refused: %s", exc)
        return set(), exc.args[0].code()
    results = result or []
    refused = [tp.error.code() for tp in results if tp.error is not None]
    accepted = {TopicPartition(tp.topic, tp.partition) for tp in results if tp.error is None}
    return accepted, refused[0] if refused else None


class CommitWithheld(GenerationMoved):
    """The embedded member did not hand the commit to librdkafka (`group_errors.commit_bar` says why): Kafka
    would refuse it for the generation, or librdkafka would hold it for a coordinator that a static member's
    session may not outlive. Like `GenerationMoved`, the next commit after the assignment carries the offsets."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(code)
        self.args = (f"Kafka offset commit withheld by the embedded member: {reason}",)
