"""Kafka's authorization refusals named as the missing ACL, per request (no message is read)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from migrator.coordination.preflight import preflight
from migrator.kafka.admin import KafkaUnavailable
from migrator.kafka.authorization import KafkaNotAuthorized, KafkaRequest, asking, missing_acl
from migrator.protocol.codecs import Mode
from migrator.protocol.group_view import GroupView
from migrator.protocol.kafka import KafkaAcl

GROUP_DENIED = KafkaError.GROUP_AUTHORIZATION_FAILED
TOPIC_DENIED = KafkaError.TOPIC_AUTHORIZATION_FAILED
CLUSTER_DENIED = KafkaError.CLUSTER_AUTHORIZATION_FAILED


@pytest.mark.parametrize(
    ("code", "request_", "acl"),
    [
        (GROUP_DENIED, KafkaRequest.DESCRIBE_GROUP, KafkaAcl("Describe", "Group", "g")),
        (GROUP_DENIED, KafkaRequest.FETCH_OFFSETS, KafkaAcl("Describe", "Group", "g")),
        (TOPIC_DENIED, KafkaRequest.FETCH_OFFSETS, KafkaAcl("Describe", "Topic", "a,b")),
        (TOPIC_DENIED, KafkaRequest.LIST_OFFSETS, KafkaAcl("Describe", "Topic", "a,b")),
        (GROUP_DENIED, KafkaRequest.COMMIT_OFFSETS, KafkaAcl("Read", "Group", "g")),
        (CLUSTER_DENIED, KafkaRequest.DESCRIBE_BROKER_CONFIGS, KafkaAcl("DescribeConfigs", "Cluster", "kafka-cluster")),
        (KafkaError.NOT_COORDINATOR, KafkaRequest.DESCRIBE_GROUP, None),
        (None, KafkaRequest.DESCRIBE_GROUP, None),
        (TOPIC_DENIED, KafkaRequest.DESCRIBE_GROUP, None),  # DescribeGroups checks no topic
    ],
)
def test_each_refusal_names_the_acl_its_request_needs(code, request_, acl) -> None:
    assert missing_acl(code, request_, group="g", topics=["b", "a", "b"]) == acl


def test_asking_raises_a_typed_error_only_for_refusals() -> None:
    def denied() -> None:
        raise KafkaUnavailable("describe group g: Broker: Group authorization failed", GROUP_DENIED)

    with pytest.raises(KafkaNotAuthorized) as caught:
        asking(KafkaRequest.DESCRIBE_GROUP, denied, group="g")
    assert caught.value.acl == KafkaAcl("Describe", "Group", "g")
    assert str(caught.value).startswith("Kafka denies Describe on Group:g")

    def timed_out() -> None:
        raise KafkaUnavailable("no answer")

    with pytest.raises(KafkaUnavailable) as plain:
        asking(KafkaRequest.DESCRIBE_GROUP, timed_out, group="g")
    assert not isinstance(plain.value, KafkaNotAuthorized)


def test_preflight_names_the_missing_acl() -> None:
    acl = KafkaAcl("Describe", "Group", "g")
    for target in Mode:
        refusals = preflight(target, GroupView("g"), None, kafka_error=acl).refusals
        assert any("Kafka denies Describe on Group:g" in r for r in refusals), refusals
        assert not any("cannot be checked" in r for r in refusals)
