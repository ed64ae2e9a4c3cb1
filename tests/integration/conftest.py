"""Fixtures of the integration tests: the real JVM peers (test_interop, test_fleet_spark) and simulated groups."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from migrator.devcluster.jars import ensure_jars, ensure_old_consumer_jars
from tests.helpers.fake_group import FakeGroup
from tests.helpers.kafka import KafkaCluster, make_topic
from tests.helpers.peers import JvmPeers


@pytest.fixture(scope="session")
def jvm_peers(tmp_path_factory: pytest.TempPathFactory) -> JvmPeers:
    """The Scala old consumer and Java KafkaConsumer programs, compiled once per session against the cache."""
    return JvmPeers.compile(ensure_old_consumer_jars(), ensure_jars(), tmp_path_factory.mktemp("jvm"))


@pytest.fixture
def fake_group(cluster: KafkaCluster, unique_group: str, unique_topic: str) -> Iterator[FakeGroup]:
    """A group of simulated members on a new 3-partition topic; every member is gone after the test."""
    make_topic(cluster, unique_topic, partitions=3)
    with FakeGroup(cluster, unique_group, unique_topic) as fake:
        yield fake
