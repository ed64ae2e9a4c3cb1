"""Operator commands name the dialect a group is written in, as an operator meets them (the CLI as a subprocess):
a group of a real pykafka 2.8.0 `BalancedConsumer` (its own process) reads as `pykafka`, a hand-registered
Scala member as `scala`, and a group whose nodes match neither layout is refused, never read with a guess.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from migrator.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED
from migrator.protocol.codecs import Registration
from migrator.protocol.pykafka_layout import Spelling, topic_text
from migrator.zk.paths import GroupPaths
from tests.helpers.cli import run
from tests.helpers.kafka import make_topic
from tests.helpers.pykafka_peer import PykafkaMember
from tests.helpers.wait import wait_until

PARTITIONS = 4


@pytest.fixture
def pykafka_member(cluster: Any, unique_group: str, unique_topic: str, tmp_path: Path) -> Iterator[PykafkaMember]:
    make_topic(cluster, unique_topic, partitions=PARTITIONS)
    log = tmp_path / "pykafka.jsonl"
    member = PykafkaMember(cluster.zookeeper, cluster.bootstrap_servers, unique_group, unique_topic, log)
    yield member
    member.kill() if member.alive() else None


def _json(*args: str, code: int = EXIT_OK) -> Any:
    done = run(*args)
    assert done.code == code, done
    return json.loads(done.stdout)


def test_a_pykafka_group_is_named_and_judged_in_its_own_dialect(
    cluster: Any, zk_client: KazooClient, pykafka_member: PykafkaMember, unique_group: str, unique_topic: str
) -> None:
    folder = f"{GroupPaths(unique_group).owners}/{topic_text(unique_topic, Spelling.PYTHON3)}"
    wait_until(lambda: len(zk_client.get_children(folder)) == PARTITIONS if zk_client.exists(folder) else False, 60,
               what="the pykafka member owns every partition")  # fmt: skip
    base = ("-z", cluster.zookeeper, "-g", unique_group, "-b", cluster.bootstrap_servers)

    report = _json("status", *base, "--json")
    assert report["dialect"] == "pykafka" and report["verdict"] != "ERR", report["findings"]
    assert report["agreement_basis"] == "zookeeper (pykafka range)" and report["owners_agree"] is True, report
    owners = {row["owner"] for row in report["partitions"]}
    assert owners == {f"{pykafka_member.consumer_id}-0"}, report["partitions"]
    assert "dialect pykafka" in run("status", *base).stdout.splitlines()[0]

    assert run("get-mode", *base[:4]).stdout.strip().endswith("; dialect pykafka")

    dry = _json("set-mode", "kafka", *base, "--dry-run", "--json", code=EXIT_REFUSED)
    assert dry["dialect"] == "pykafka" and dry["preflight"] == "refused", dry
    assert any(f"{pykafka_member.consumer_id} (pykafka)" in r for r in dry["refusals"]), dry["refusals"]

    line = run("offsets", "export", "--store", "zookeeper", *base).single_error(EXIT_REFUSED)
    assert "is a pykafka group: pykafka keeps no offsets in ZooKeeper" in line, line


def test_a_scala_group_is_named_scala(cluster: Any, zk_client: KazooClient, unique_group: str) -> None:
    registration = Registration(subscription={"orders": 1})
    zk_client.create(GroupPaths(unique_group).member("g_a"), registration.encode(), makepath=True)
    assert _json("get-mode", "-z", cluster.zookeeper, "-g", unique_group, "--json")["dialect"] == "scala"


def test_a_group_in_neither_layout_is_refused_by_every_command(
    cluster: Any, zk_client: KazooClient, unique_group: str
) -> None:
    zk_client.create(GroupPaths(unique_group).member("x"), b"{not json", makepath=True)
    base = ("-z", cluster.zookeeper, "-g", unique_group, "-b", cluster.bootstrap_servers)
    node = "ids/x matches neither the Scala nor the pykafka layout"
    assert node in run("get-mode", *base[:4]).single_error(EXIT_REFUSED)
    dry = run("set-mode", "kafka", "--dry-run", *base)
    assert dry.code == EXIT_REFUSED and node in dry.stdout, dry
    status = run("status", *base)
    assert node in status.single_error(EXIT_FAILED) and "layout-unrecognised" in status.stdout
