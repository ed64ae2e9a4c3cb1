"""`migrator status` as an operator's script runs it: a verdict and an exit code, and a missing Kafka ACL named."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from migrator.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from tests.helpers import cli
from tests.helpers.fake_group import FakeGroup
from tests.helpers.kafka import make_topic
from tests.helpers.wait import wait_until

pytestmark = pytest.mark.integration

AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
"""Every principal may do anything without an ACL, so one DENY takes one permission away."""


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _own_every_partition(fake_group: FakeGroup, cid: str, partitions: int = 3) -> None:
    zk = fake_group.register(cid, bridge=False)
    for partition in range(partitions):
        zk.create(fake_group.paths.owner(fake_group.topic, partition), f"{cid}-0".encode(), makepath=True)


def _describes(bootstrap: str, group: str) -> bool:
    try:
        KafkaAdmin(bootstrap, timeout_s=5).describe_group(group)
    except KafkaUnavailable:
        return False
    return True


def test_a_healthy_legacy_group_is_ok(cluster: Any, fake_group: FakeGroup) -> None:
    _own_every_partition(fake_group, f"{fake_group.group}_legacy")
    # the first DescribeGroups of a fresh cluster waits for __consumer_offsets to be created
    wait_until(lambda: _describes(cluster.bootstrap_servers, fake_group.group), timeout=180, what="a describe")
    done = cli.run("status", "-z", cluster.zookeeper, "-g", fake_group.group, "--json")
    assert done.code == EXIT_OK, done.stdout
    report = json.loads(done.stdout)
    assert (report["verdict"], report["findings"], report["exists"]) == ("OK", [], True)


def test_kafka_unreachable_is_an_error(cluster: Any, fake_group: FakeGroup) -> None:
    _own_every_partition(fake_group, f"{fake_group.group}_legacy")
    broker = f"127.0.0.1:{_closed_port()}"
    argv = ["status", "-z", cluster.zookeeper, "-g", fake_group.group, "-b", broker, "--connect-timeout", "2"]
    done = cli.run(*argv, "--json")
    assert done.single_error(EXIT_FAILED).startswith(f"error: group {fake_group.group} is ERR: kafka-unreachable: ")
    report = json.loads(done.stdout)
    assert report["verdict"] == "ERR" and report["kafka_state"] is None
    assert [(f["kind"], f["severity"]) for f in report["findings"]] == [("kafka-unreachable", "ERR")]


def test_a_denied_group_acl_is_named_by_status_and_the_preflight(
    cluster_factory: Callable[..., Any], unique_group: str, unique_topic: str
) -> None:
    secured = cluster_factory(extra_broker_config=AUTHORIZER)
    make_topic(secured, unique_topic, partitions=3)
    deny = AclBinding(
        ResourceType.GROUP, unique_group, ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
        AclOperation.DESCRIBE, AclPermissionType.DENY,
    )  # fmt: skip
    admin = AdminClient({"bootstrap.servers": secured.bootstrap_servers})
    for future in admin.create_acls([deny]).values():
        future.result(timeout=30)
    with FakeGroup(secured, unique_group, unique_topic) as fake_group:
        _own_every_partition(fake_group, f"{unique_group}_legacy")
        base = ["-z", secured.zookeeper, "-g", unique_group, "-b", secured.bootstrap_servers]

        done = cli.run("status", *base, "--json")
        done.single_error(EXIT_FAILED)
        (found,) = json.loads(done.stdout)["findings"]
        assert found["kind"] == "kafka-acl-missing"
        assert f"Kafka denies Describe on Group:{unique_group}" in found["message"]

        refused = cli.run("set-mode", "zookeeper", "--dry-run", *base)
        assert refused.code == EXIT_REFUSED, refused.stderr
        assert f"Kafka denies Describe on Group:{unique_group}" in refused.stdout
        assert "cannot be checked" not in refused.stdout
