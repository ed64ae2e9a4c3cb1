"""Shared fixtures: one real dev cluster per session for integration tests, none for unit tests.

Tests under tests/integration are marked `integration` automatically; every test marked
`integration` or `chaos` gets the session cluster, so `pytest tests/unit` never starts a JVM.
Set MIGRATOR_TEST_ZOOKEEPER and MIGRATOR_TEST_BOOTSTRAP to run against an external cluster.
"""

from __future__ import annotations

import faulthandler
import os
import re
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # so that `tests.helpers` imports the same way from every test dir

from hypothesis import settings  # noqa: E402
from kazoo.client import KazooClient  # noqa: E402

from migrator.devcluster import DevCluster  # noqa: E402
from tests.helpers.cluster import ExternalCluster, external_from_env  # noqa: E402
from tests.helpers.workload import Member, shut_down_leftovers  # noqa: E402
from tests.helpers.zk import zk_client as _zk_client  # noqa: E402

# Property tests check logic, not speed: Hypothesis's per-example deadline (200 ms) fails them at random when the
# 2-core host is busy with the clusters of the integration tests, so it is off for the whole suite.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

Cluster = DevCluster | ExternalCluster


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    integration_dir = ROOT / "tests" / "integration"
    for item in items:
        if integration_dir in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.integration)
    items.sort(key=_module_rank(items).__getitem__)


_LONGEST_MODULES = (
    "test_soak.py",
    "test_fleet_spark.py",
    "test_drill_rolling_restart.py",
    "test_interop.py",
    "test_drill_broker_silent.py",
    "test_drill_broker_outage.py",
    "test_drill_coordinator_returns.py",
    "test_pykafka_migration.py",
)
"""The modules that take minutes each (by `--durations`), longest first."""

_KINDS = ("chaos", "slow", "interop", "integration")


def _item_rank(item: pytest.Item) -> tuple[int, int]:
    """The known longest modules, then fault drills, slow or real-peer tests, other integration tests, unit tests."""
    if item.path.name in _LONGEST_MODULES:
        return 0, _LONGEST_MODULES.index(item.path.name)
    kind = next((i for i, marker in enumerate(_KINDS) if item.get_closest_marker(marker)), len(_KINDS))
    return 1 + kind, 0


def _module_rank(items: list[pytest.Item]) -> dict[pytest.Item, tuple[int, int]]:
    """Each item's module rank: the longest modules run first, so that `-n 2 --dist loadfile` starts them at
    once and fills the end with short modules instead of waiting for one long module.

    A module's rank is its lowest item rank, so that a module's items stay together (its fixtures are set up
    once) and keep their order (the sort is stable).
    """
    by_module: dict[Path, tuple[int, int]] = {}
    for item in items:
        by_module[item.path] = min(by_module.get(item.path, (9, 0)), _item_rank(item))
    return {item: by_module[item.path] for item in items}


_STDERR = pytest.StashKey[int]()


def pytest_configure(config: pytest.Config) -> None:
    """Keep a copy of stderr as it is between tests (pytest captures it during a test and a conftest's import)."""
    config.stash[_STDERR] = os.dup(2)


_STACKS_BEFORE_TIMEOUT_S = 5
"""How long before pytest-timeout ends a hung test's worker its threads' stacks are written to stderr."""


def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> None:
    """Arm a dump of every thread's stack to stderr shortly before the test's timeout (pytest-timeout's own
    timer, armed after this, with the same resolved `settings`, ends the test).

    pytest-timeout's thread method (pyproject.toml) ends a test stuck in a call that never returns to Python
    (a librdkafka close, say), which its signal method cannot interrupt; but under xdist the stacks it prints
    are lost with the worker, and they are what tells one hang from another.
    """
    if settings.timeout > _STACKS_BEFORE_TIMEOUT_S:
        dump_at = settings.timeout - _STACKS_BEFORE_TIMEOUT_S
        faulthandler.dump_traceback_later(dump_at, file=item.config.stash[_STDERR])


def pytest_timeout_cancel_timer(item: pytest.Item) -> None:
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest) -> Cluster:
    """ZooKeeper + one broker (with secured listeners beside PLAINTEXT) shared by the whole session; downed at
    the end, even after failures."""
    external = external_from_env()
    if external is not None:
        return external
    started = DevCluster.start(brokers=1, secured=True)  # SSL, SASL_SSL and SASL_PLAINTEXT listeners too
    request.addfinalizer(started.down)
    return started


@pytest.fixture(autouse=True)
def _cluster_for_marked_tests(request: pytest.FixtureRequest) -> Iterator[None]:
    """The session cluster for integration and chaos tests; after each, the connectors it left running.

    A test that fails before its own shutdown would otherwise leave connectors consuming (and
    rebalancing) into the next tests, and keep the interpreter from exiting at the end.
    """
    if not (request.node.get_closest_marker("integration") or request.node.get_closest_marker("chaos")):
        yield
        return
    request.getfixturevalue("cluster")
    yield
    shut_down_leftovers()


@pytest.fixture
def cluster_factory(request: pytest.FixtureRequest) -> Callable[..., DevCluster]:
    """Start dedicated clusters (e.g. to kill their brokers); each is downed when the test ends."""

    def start(brokers: int = 1, group_max_size: int | None = None, **kwargs: object) -> DevCluster:
        started = DevCluster.start(brokers=brokers, group_max_size=group_max_size, **kwargs)  # type: ignore[arg-type]
        request.addfinalizer(started.down)
        return started

    return start


def _unique(prefix: str, request: pytest.FixtureRequest) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name).strip("-")[:40]
    return f"{prefix}-{slug}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def unique_group(request: pytest.FixtureRequest) -> str:
    return _unique("g", request)


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> str:
    return _unique("t", request)


@pytest.fixture
def zk_client(cluster: Cluster) -> Iterator[KazooClient]:
    """A started kazoo client on the session cluster, stopped after the test."""
    with _zk_client(cluster) as client:
        yield client


@pytest.fixture
def members() -> Iterator[list[Member]]:
    """In-process members a test starts; shut down in reverse order when it ends, even by failure."""
    started: list[Member] = []
    yield started
    for m in reversed(started):
        m.shutdown()
