"""The finish line as a team walks it, in each dialect: a group migrated to plain Kafka consumers, cleaned up,
restored, switched back to bridges (which consume on from where the group was), and cleaned up again.

Every member is its own process; a batch is produced after each step and processed before the next, and the
independent observer judges the whole run: nothing lost, nothing processed twice, never two members at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from migrator.demo.workload import bridge_props
from migrator.observe import duplicates, lost, overlaps
from migrator.zk.paths import GroupPaths
from tests.helpers import cli
from tests.helpers.kafka import make_topic
from tests.helpers.member_proc import MemberProcess
from tests.helpers.peers import PATIENT
from tests.integration.test_cleanup import tree_of
from tests.integration.test_pykafka_migration import PARTITIONS, Migration, bridges_obey

pytestmark = pytest.mark.integration


class Walk(Migration):
    """`Migration`'s members and batches, with bridges in the group's own dialect."""

    def __init__(self, *args: Any, layout: str) -> None:
        super().__init__(*args)
        self.layout = layout

    def bridge(self, name: str) -> MemberProcess:
        props = {"zookeeper.layout": self.layout, **bridge_props(self.cluster.bootstrap_servers), **PATIENT}
        member = MemberProcess(self.cluster.zookeeper, self.group, self.topic, name, self.log(name), props=props)
        self.members[name] = member
        return member

    def cleanup(self, *args: str) -> cli.CliRun:
        return cli.run("cleanup", "-z", self.cluster.zookeeper, "-b", self.cluster.bootstrap_servers, *args)


@pytest.fixture(params=["scala", "pykafka"])
def walk(request: pytest.FixtureRequest, cluster: Any, zk_client: KazooClient, unique_group: str,
         unique_topic: str, tmp_path: Path) -> Iterator[Walk]:  # fmt: skip
    make_topic(cluster, unique_topic, partitions=PARTITIONS)
    w = Walk(cluster, zk_client, unique_group, unique_topic, tmp_path, layout=request.param)
    yield w
    w.close()


def to_plain_consumers(w: Walk) -> None:
    """Legacy members (pykafka's own, for that dialect) → a bridge → the switch → a plain consumer, then stop."""
    if w.layout == "pykafka":
        w.pykafka("p0")
        w.batch("pykafka only")
    w.bridge("b0")
    if w.layout == "pykafka":
        w.stop("p0")
    w.batch("a bridge")
    assert w.set_mode("kafka").code == 0
    bridges_obey(w, ["b0"], "kafka")
    w.batch("a bridge under kafka")
    w.confluent("c0")
    w.batch("a bridge and a plain consumer")
    w.stop("b0")
    w.batch("a plain consumer only")
    w.stop("c0")


def test_a_migrated_group_is_cleaned_restored_rolled_back_and_cleaned_again(walk: Walk, tmp_path: Path) -> None:
    w = walk
    root = GroupPaths(w.group).root
    to_plain_consumers(w)
    before = tree_of(w.zk, root)
    dry = w.cleanup("-g", w.group, "--json")
    assert dry.code == 0, dry.stderr
    assert json.loads(dry.stdout)["paths"][-1] == root and tree_of(w.zk, root) == before

    first = tmp_path / "first.json"
    assert w.cleanup("-g", w.group, "--execute", "--archive", str(first)).code == 0
    assert w.zk.exists(root) is None
    restored = w.cleanup("--restore", str(first), "--execute")
    assert restored.code == 0, restored.stderr
    assert tree_of(w.zk, root) == before

    # the rollback path is open again: a bridge under the restored mode, then back to ZooKeeper's authority
    w.bridge("b1")
    bridges_obey(w, ["b1"], "kafka")
    w.batch("restored: a bridge under kafka")
    assert w.set_mode("zookeeper").code == 0
    bridges_obey(w, ["b1"], "zookeeper")
    w.batch("restored: a bridge under zookeeper")
    refused = w.cleanup("-g", w.group, "--execute", "--archive", str(tmp_path / "refused.json"))
    assert "members: 1 members still registered under ids" in refused.single_error(2)

    # and forward once more, to be cleaned again
    assert w.set_mode("kafka").code == 0
    bridges_obey(w, ["b1"], "kafka")
    w.batch("again under kafka")
    w.stop("b1")
    again = w.cleanup("-g", w.group, "--execute", "--archive", str(tmp_path / "second.json"))
    assert again.code == 0, again.stdout + again.stderr
    assert w.zk.exists(root) is None

    records = w.records()
    assert not lost(w.produced, records)
    assert not duplicates(records) and not overlaps(records)
