"""Kafka's authorization refusals, named as the ACL that is missing.

A refused request carries only an error code that names the kind of resource (topic, group, cluster); which
operation the request needed is a property of the request, so each caller says what it asked. The mapping is
Kafka's (the operations each API checks, per the ACL reference of the Kafka docs, "Operations and Resources
on Protocols").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from typing import TypeVar

from confluent_kafka import KafkaError

from migrator.kafka.admin import KafkaUnavailable
from migrator.protocol.kafka import KafkaAcl

T = TypeVar("T")

CLUSTER = "kafka-cluster"
"""The one resource name of the Cluster resource."""


class KafkaRequest(Enum):
    """A request migrator sends, with the operation it needs on each kind of resource it checks."""

    DESCRIBE_GROUP = (("Group", "Describe"),)
    FETCH_OFFSETS = (("Group", "Describe"), ("Topic", "Describe"))
    COMMIT_OFFSETS = (("Group", "Read"), ("Topic", "Read"))
    LIST_OFFSETS = (("Topic", "Describe"),)
    DESCRIBE_BROKER_CONFIGS = (("Cluster", "DescribeConfigs"),)

    @property
    def operations(self) -> dict[str, str]:
        """The operation needed per resource type."""
        return dict(self.value)


_RESOURCE_OF_CODE = {
    KafkaError.GROUP_AUTHORIZATION_FAILED: "Group",
    KafkaError.TOPIC_AUTHORIZATION_FAILED: "Topic",
    KafkaError.CLUSTER_AUTHORIZATION_FAILED: "Cluster",
}


class KafkaNotAuthorized(KafkaUnavailable):
    """Kafka refused a request for want of `acl` (for the principal migrator's clients connect as)."""

    def __init__(self, acl: KafkaAcl, cause: KafkaUnavailable) -> None:
        super().__init__(f"Kafka denies {acl} to this client's principal ({cause})", cause.code)
        self.acl = acl


def missing_acl(
    code: int | None, request: KafkaRequest, *, group: str = "", topics: Iterable[str] = ()
) -> KafkaAcl | None:
    """The ACL whose absence `code` reports for `request`; None when `code` is no authorization refusal."""
    resource_type = _RESOURCE_OF_CODE.get(code) if code is not None else None
    operation = request.operations.get(resource_type) if resource_type is not None else None
    if resource_type is None or operation is None:
        return None
    names = {"Group": group, "Topic": ",".join(sorted(set(topics))) or "*", "Cluster": CLUSTER}
    return KafkaAcl(operation, resource_type, names[resource_type])


def asking(request: KafkaRequest, call: Callable[[], T], *, group: str = "", topics: Iterable[str] = ()) -> T:
    """`call()`, with an authorization refusal raised as `KafkaNotAuthorized` naming the missing ACL."""
    try:
        return call()
    except KafkaNotAuthorized:
        raise
    except KafkaUnavailable as exc:
        acl = missing_acl(exc.code, request, group=group, topics=topics)
        if acl is None:
            raise
        raise KafkaNotAuthorized(acl, exc) from exc
