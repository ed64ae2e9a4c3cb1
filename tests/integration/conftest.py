"""Fixtures of the integration tests that run the real JVM peers (test_interop, test_fleet_spark)."""

from __future__ import annotations

import pytest

from migrator.devcluster.jars import ensure_jars, ensure_old_consumer_jars
from tests.helpers.peers import JvmPeers


@pytest.fixture(scope="session")
def jvm_peers(tmp_path_factory: pytest.TempPathFactory) -> JvmPeers:
    """The Scala old consumer and Java KafkaConsumer programs, compiled once per session against the cache."""
    return JvmPeers.compile(ensure_old_consumer_jars(), ensure_jars(), tmp_path_factory.mktemp("jvm"))
