"""`migrator status -g G` reads the group in one pipelined pass, whatever its dialect: counted on the real
ZooKeeper as an operator runs the command (a subprocess whose kazoo client counts its round trips)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from migrator.errors import EXIT_OK
from migrator.protocol.dialect import Dialect
from tests.helpers.cli import run
from tests.helpers.kafka import make_topic
from tests.helpers.layouts import write_group
from tests.helpers.round_trips import counting_env, read_counts

PARTITIONS = 8
MEMBERS = 4
EXISTENCE_CHECK = 2
"""`/consumers` and `/consumers/<group>` exist (a typo'd group is exit 3), before the group is read."""
ONE_PASS = 3
"""The group reader's pipelined levels: listings, then members and folders, then owners and offsets."""


@pytest.mark.parametrize("dialect", list(Dialect))
def test_status_reads_a_group_in_one_pipelined_pass_whatever_its_dialect(
    cluster: Any, zk_client: KazooClient, unique_group: str, unique_topic: str, tmp_path: Path, dialect: Dialect
) -> None:
    topic = make_topic(cluster, unique_topic, partitions=PARTITIONS)
    write_group(zk_client, unique_group, topic, PARTITIONS, MEMBERS, dialect)

    done = run("status", "-z", cluster.zookeeper, "-g", unique_group, "-b", cluster.bootstrap_servers, "--json",
               env=counting_env(tmp_path))  # fmt: skip

    assert done.code == EXIT_OK, done
    report = json.loads(done.stdout)
    assert report["dialect"] == dialect.value and len(report["partitions"]) == PARTITIONS, report
    assert all(row["owner"] for row in report["partitions"]), report["partitions"]
    counts = read_counts(tmp_path)
    assert counts["writes"] == [], counts["writes"]  # status is read-only
    assert counts["round_trips"] == EXISTENCE_CHECK + ONE_PASS, counts
