"""docs/application.md against the code: the exported names, the errors an application can see, the
prefixed properties, and the bounds it quotes (the unprefixed property table: tests/unit/test_config.py)."""

from __future__ import annotations

import builtins
import re
from pathlib import Path

import pytest

import migrator
from migrator.config import FETCHER_PREFIX, KAFKA_PREFIX, MIGRATION_PREFIX, ConsumerConfig
from migrator.connector import SHUTDOWN_GRACE_S
from migrator.coordination.holdings import IN_FLIGHT_WAIT_S
from migrator.coordination.worker import SHUTDOWN_IN_FLIGHT_WAIT_S
from migrator.errors import ConfigError

DOC = (Path(__file__).parents[2] / "docs" / "application.md").read_text()
BASE = {"zookeeper.connect": "127.0.0.1:2181", "group.id": "g"}


def section(title: str) -> str:
    start = DOC.index(f"\n## {title}\n")
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end >= 0 else len(DOC)]


def table_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| ")]


def test_the_exported_names_are_what_migrator_exports() -> None:
    sentence = DOC[DOC.index("Everything the program needs") :].split("\n\n", 1)[0]
    assert set(re.findall(r"`(\w+)`", sentence)) - {"migrator", "aiter"} == set(migrator.__all__)


def test_the_errors_table_names_exactly_the_exceptions_an_application_can_see() -> None:
    seen = {name for row in table_rows(section("Errors"))[1:] for name in re.findall(r"`([A-Z]\w+)`", row[2])}
    exported = {n for n in migrator.__all__ if isinstance(getattr(migrator, n), type)
                and issubclass(getattr(migrator, n), BaseException)}  # fmt: skip
    for name in seen:
        assert name in exported or isinstance(getattr(builtins, name, None), type), name
    assert exported - {"MigratorError"} <= seen  # the base class is named in the text, each subclass in the table
    assert "TimeoutError" in seen  # commit_offsets() gives up with it


def test_the_prefixed_properties_are_the_families_config_passes_through() -> None:
    begin, end = "<!-- prefixed properties: tested against migrator/config.py -->", "<!-- /prefixed properties -->"
    rows = table_rows(DOC[DOC.index(begin) : DOC.index(end)])[1:]
    names = [row[0].strip("`") for row in rows]
    assert names == [f"{KAFKA_PREFIX}bootstrap.servers", f"{MIGRATION_PREFIX}bootstrap.servers",
                     f"{KAFKA_PREFIX}<p>", f"{FETCHER_PREFIX}<p>", f"{MIGRATION_PREFIX}<p>"]  # fmt: skip
    legacy = ConsumerConfig.from_mapping(BASE | {"kafka.bootstrap.servers": "k:9092", "fetcher.fetch.max.bytes": "7"})
    assert legacy.bootstrap_servers == "k:9092"
    assert legacy.fetcher_client_properties() == {"bootstrap.servers": "k:9092", "fetch.max.bytes": "7"}
    bridge = BASE | {"coordination.migration.enabled": "true"}
    assert ConsumerConfig.from_mapping(bridge | {"coordination.migration.bootstrap.servers": "m:1"}).bootstrap_servers
    with pytest.raises(ConfigError, match=r"bootstrap\.servers is required"):
        ConsumerConfig.from_mapping(bridge)


def test_the_bounds_quoted_are_the_code_s() -> None:
    assert f"after {IN_FLIGHT_WAIT_S:g} s ({SHUTDOWN_IN_FLIGHT_WAIT_S:g} s at shutdown)" in DOC.replace("\n", " ")
    assert f"plus {SHUTDOWN_GRACE_S:g} s" in DOC
