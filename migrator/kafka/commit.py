"""A synchronous Kafka offset commit that reports which partitions the broker accepted."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from migrator.protocol.partition import TopicPartition

log = logging.getLogger(__name__)


def commit_sync(consumer: Consumer, offsets: Mapping[TopicPartition, int]) -> set[TopicPartition]:
    """Commit `offsets` (next offsets) and return the accepted partitions; a refused commit returns none."""
    if not offsets:
        return set()
    tps = [KafkaTopicPartition(t, p, o) for (t, p), o in offsets.items()]
    try:
        result = consumer.commit(offsets=tps, asynchronous=False)
    except KafkaException as exc:
        log.info("Kafka offset commit refused: %s", exc)
        return set()
    return {TopicPartition(tp.topic, tp.partition) for tp in result or [] if tp.error is None}
