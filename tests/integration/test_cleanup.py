"""`migrator cleanup` as an operator runs it: a finished group's tree archived, deleted and put back exactly;
each refusal leaving the tree as it was; a member registering mid-delete making it put back what it removed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from migrator.fleet.lock import FleetLock
from migrator.kafka.admin import KafkaAdmin
from migrator.ops import cleanup as ops
from migrator.protocol.codecs import Registration
from migrator.protocol.partition import TopicPartition
from migrator.zk.paths import GroupPaths
from tests.helpers import cli
from tests.helpers.kafka import make_topic
from tests.helpers.zk import zk_client as open_zk

pytestmark = pytest.mark.integration

ADMIN = "digest:ops:s3cret"
PARTITIONS = 3

Tree = dict[str, tuple[bytes, list[tuple[str, str, int]], list[str]]]


def tree_of(zk: KazooClient, root: str) -> Tree:
    """Every node under `root`, read independently of the product: data, ACLs and children."""
    out: Tree = {}
    level = [root]
    while level:
        nxt: list[str] = []
        for path in level:
            try:
                data, _ = zk.get(path)
                acls, _ = zk.get_acls(path)
                children = sorted(zk.get_children(path))
            except NoNodeError:
                continue
            out[path] = (data, sorted((a.id.scheme, a.id.id, a.perms) for a in acls), children)
            nxt += [f"{path}/{c}" for c in children]
        level = nxt
    return out


@pytest.fixture
def admin(cluster: Any) -> Iterator[KafkaAdmin]:
    client = KafkaAdmin(cluster.bootstrap_servers, {}, timeout_s=30)
    yield client
    client.close()


def finished_group(zk: KazooClient, admin: KafkaAdmin, group: str, topic: str, kafka_ahead: int = 2) -> GroupPaths:
    """A group as bridges then plain consumers leave it: ZooKeeper offsets, the mode `kafka`, an audit entry,
    empty member folders; Kafka holding every offset `kafka_ahead` beyond ZooKeeper's."""
    p = GroupPaths(group)
    for folder in (p.ids, p.owners_topic(topic), p.migration_ids, p.authority, p.audit):
        zk.ensure_path(folder)
    zk.create(p.mode, b"kafka")
    zk.create(f"{p.audit}/entry-0000000000", b'{"from":"absent","to":"kafka"}')
    offsets = {TopicPartition(topic, part): 10 + part for part in range(PARTITIONS)}
    for tp, offset in offsets.items():
        zk.create(p.offset(tp.topic, tp.partition), str(offset).encode(), makepath=True)
    admin.alter_offsets(group, {tp: o + kafka_ahead for tp, o in offsets.items()})
    return p


def cleanup(cluster: Any, *args: str) -> cli.CliRun:
    return cli.run("cleanup", "-z", cluster.zookeeper, "-b", cluster.bootstrap_servers, *args)


def test_a_finished_group_is_archived_deleted_and_put_back_exactly(
    cluster: Any, zk_client: KazooClient, admin: KafkaAdmin, unique_group: str, unique_topic: str, tmp_path: Path
) -> None:
    make_topic(cluster, unique_topic, partitions=PARTITIONS)
    p = finished_group(zk_client, admin, unique_group, unique_topic)
    before = tree_of(zk_client, p.root)

    dry = cleanup(cluster, "-g", unique_group)
    assert dry.code == 0, dry.stderr
    assert f"would delete {p.offset(unique_topic, 0)}" in dry.stdout and f"would delete {p.root}\n" in dry.stdout
    assert tree_of(zk_client, p.root) == before

    archive = tmp_path / "orders.json"
    done = cleanup(cluster, "-g", unique_group, "--execute", "--archive", str(archive), "--json")
    assert done.code == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["outcome"] == "deleted" and doc["archive"] == str(archive) and doc["nodes"] == len(before)
    assert zk_client.exists(p.root) is None
    saved = json.loads(archive.read_text())
    assert saved["schema"] == 1 and saved["summary"]["mode"] == "kafka"
    assert saved["summary"]["offsets"] == {f"{unique_topic}-{i}": 10 + i for i in range(PARTITIONS)}

    again = cleanup(cluster, "--restore", str(archive), "--execute")
    assert again.code == 0, again.stderr
    assert tree_of(zk_client, p.root) == before
    twice = cleanup(cluster, "--restore", str(archive), "--execute")
    assert "exists in ZooKeeper" in twice.single_error(2)


def test_a_protected_group_needs_the_admin_identity_and_comes_back_with_its_acls(
    cluster: Any, zk_client: KazooClient, admin: KafkaAdmin, unique_group: str, unique_topic: str, tmp_path: Path
) -> None:
    make_topic(cluster, unique_topic, partitions=PARTITIONS)
    p = finished_group(zk_client, admin, unique_group, unique_topic)
    assert cli.run("acl", "protect", "-z", cluster.zookeeper, "-g", unique_group, "--admin", ADMIN).code == 0
    before = tree_of(zk_client, p.root)
    archive = tmp_path / "protected.json"

    refused = cleanup(cluster, "-g", unique_group, "--execute", "--archive", str(archive))
    line = refused.single_error(2)
    assert f"group {unique_group} is protected: protected: 9 nodes whose parent's ACL denies" in line
    assert "ids (needs delete on the group's root: world:anyone=--r--, digest:ops:" in line
    assert tree_of(zk_client, p.root) == before and not archive.exists()

    done = cleanup(cluster, "-g", unique_group, "--execute", "--archive", str(archive), "--zk-auth", ADMIN)
    assert done.code == 0, done.stderr
    assert zk_client.exists(p.root) is None
    without = cleanup(cluster, "--restore", str(archive), "--execute")
    assert "is protected: protected:" in without.single_error(2) and "needs create on" in without.stderr
    assert zk_client.exists(p.root) is None
    assert cleanup(cluster, "--restore", str(archive), "--execute", "--zk-auth", ADMIN).code == 0
    assert tree_of(zk_client, p.root) == before


def _live_member(zk: KazooClient, p: GroupPaths, topic: str) -> str:
    zk.create(p.member(f"{p.group}_c1"), Registration({topic: 1}).encode(), ephemeral=True)
    return f"members: 1 members still registered under ids: {p.group}_c1"


def _bridge(zk: KazooClient, p: GroupPaths, topic: str) -> str:
    zk.create(p.migration_member(f"{p.group}_b1"), Registration({topic: 1}).encode(), ephemeral=True)
    return f"bridges: 1 bridges still registered under migration/ids: {p.group}_b1"


def _owner(zk: KazooClient, p: GroupPaths, topic: str) -> str:
    zk.create(p.owner(topic, 1), f"{p.group}_c1-0".encode(), ephemeral=True)
    return f"owners: 1 owner nodes still held: owners/{topic}/1"


def _missing_kafka_offset(zk: KazooClient, p: GroupPaths, topic: str) -> str:
    zk.create(p.offset(topic, PARTITIONS), b"7")
    what = "kafka-offset-missing: 1 partitions with a ZooKeeper offset and no Kafka committed offset"
    return f"{what}: {topic}-{PARTITIONS}"


def _kafka_behind(zk: KazooClient, p: GroupPaths, topic: str) -> str:
    zk.set(p.offset(topic, 0), b"99")
    return f"kafka-offset-behind: 1 partitions whose Kafka committed offset is behind ZooKeeper's: {topic}-0 (kafka 12"


@pytest.mark.parametrize("blocker", [_live_member, _bridge, _owner, _missing_kafka_offset, _kafka_behind])
def test_each_thing_still_there_refuses_the_cleanup_by_name_and_nothing_is_deleted(
    cluster: Any, zk_client: KazooClient, admin: KafkaAdmin, unique_group: str, unique_topic: str, tmp_path: Path,
    blocker: Any,
) -> None:  # fmt: skip
    make_topic(cluster, unique_topic, partitions=PARTITIONS + 1)
    p = finished_group(zk_client, admin, unique_group, unique_topic)
    expected = blocker(zk_client, p, unique_topic)
    before = tree_of(zk_client, p.root)
    archive = tmp_path / "refused.json"
    refused = cleanup(cluster, "-g", unique_group, "--execute", "--archive", str(archive))
    line = refused.single_error(2)
    assert line.startswith(f"error: group {unique_group} is not finished: {expected}"), line
    assert tree_of(zk_client, p.root) == before and not archive.exists()


def test_another_scanner_holding_the_lock_refuses_the_cleanup(
    cluster: Any, zk_client: KazooClient, admin: KafkaAdmin, unique_group: str, unique_topic: str, tmp_path: Path
) -> None:
    make_topic(cluster, unique_topic, partitions=PARTITIONS)
    p = finished_group(zk_client, admin, unique_group, unique_topic)
    before = tree_of(zk_client, p.root)
    with open_zk(cluster) as other, FleetLock(other, "other-run"):
        refused = cleanup(cluster, "-g", unique_group, "--execute", "--archive", str(tmp_path / "a.json"))
        dry = cleanup(cluster, "-g", unique_group)
    assert "run other-run" in refused.single_error(2) and "run other-run" in dry.single_error(2)
    assert tree_of(zk_client, p.root) == before and not (tmp_path / "a.json").exists()


def test_an_abandoned_group_is_cleaned_without_kafka_offsets_but_a_recent_one_is_not(
    cluster: Any, zk_client: KazooClient, unique_group: str, unique_topic: str, tmp_path: Path
) -> None:
    p = GroupPaths(unique_group)
    zk_client.ensure_path(p.ids)
    zk_client.create(p.offset(unique_topic, 0), b"5", makepath=True)
    not_finished = cleanup(cluster, "-g", unique_group, "--execute", "--archive", str(tmp_path / "a.json"))
    assert "kafka-offset-missing" in not_finished.single_error(2)
    recent = cleanup(cluster, "-g", unique_group, "--abandoned", "--execute", "--archive", str(tmp_path / "a.json"))
    assert f"group {unique_group} is not abandoned: recent-commit: 1 an offset commit" in recent.single_error(2)
    assert zk_client.exists(p.offset(unique_topic, 0)) is not None
    done = cleanup(cluster, "-g", unique_group, "--abandoned", "--abandoned-after", "0s", "--execute",
                   "--archive", str(tmp_path / "a.json"))  # fmt: skip
    assert done.code == 0, done.stderr
    assert zk_client.exists(p.root) is None


def _register(zk: KazooClient, p: GroupPaths, topic: str) -> str:
    zk.create(p.member(f"{p.group}_late"), Registration({topic: 1}).encode(), ephemeral=True)
    return f"{p.ids} gained a child"


def _commit(zk: KazooClient, p: GroupPaths, _topic: str) -> str:
    zk.set(f"{p.offsets}/old-topic-699", b"2")
    return f"{p.offsets}/old-topic-699 changed since it was archived"


@pytest.mark.parametrize("change", [_register, _commit])
def test_a_group_changing_mid_delete_gets_back_what_was_removed(
    cluster: Any, zk_client: KazooClient, admin: KafkaAdmin, unique_group: str, unique_topic: str, tmp_path: Path,
    change: Any,
) -> None:  # fmt: skip
    make_topic(cluster, unique_topic, partitions=PARTITIONS)
    p = finished_group(zk_client, admin, unique_group, unique_topic)
    many = [f"{p.offsets}/old-topic-{i}" for i in range(700)]  # more nodes than one transaction takes
    txn = zk_client.transaction()
    for path in many:
        txn.create(path, b"1")
    assert txn.commit() == many
    before = tree_of(zk_client, p.root)
    said: list[str] = []

    def between(i: int) -> None:
        if i == 1:
            said.append(change(zk_client, p, unique_topic))

    plan = ops.plan_cleanup(zk_client, admin, unique_group)
    assert plan.allowed and plan.transactions == 2
    result = ops.execute_cleanup(zk_client, plan, tmp_path / "race.json", cluster.zookeeper, between=between)
    assert result.outcome is ops.Outcome.RACED and result.deleted is not None
    assert result.deleted.removed == result.deleted.restored > 0 and not result.deleted.not_restored
    assert said[0] in result.race_line()
    after = tree_of(zk_client, p.root)
    if change is _register:
        del after[p.member(f"{unique_group}_late")]
        after[p.ids] = (after[p.ids][0], after[p.ids][1], [])
    else:
        data, acls, children = after[f"{p.offsets}/old-topic-699"]
        assert data == b"2"
        after[f"{p.offsets}/old-topic-699"] = (b"1", acls, children)
    assert after == before


def test_a_member_registering_while_the_command_deletes_gets_the_tree_put_back(
    cluster: Any, zk_client: KazooClient, admin: KafkaAdmin, unique_group: str, unique_topic: str, tmp_path: Path
) -> None:
    """A real concurrent registration: the member registers the moment the first transaction lands, while the
    command still has thousands of nodes to delete."""
    make_topic(cluster, unique_topic, partitions=PARTITIONS)
    p = finished_group(zk_client, admin, unique_group, unique_topic)
    for start in range(0, 3000, 1000):
        txn = zk_client.transaction()
        for i in range(start, start + 1000):
            txn.create(f"{p.offsets}/old-{i:05d}", b"1")
        assert all(isinstance(r, str) for r in txn.commit())
    before = tree_of(zk_client, p.root)
    first = json.loads(cleanup(cluster, "-g", unique_group, "--json").stdout)["paths"][0]
    member = p.member(f"{unique_group}_late")

    def on_first_delete(event: Any) -> None:
        if event.type == "DELETED":
            zk_client.create_async(member, Registration({unique_topic: 1}).encode(), ephemeral=True)

    assert zk_client.exists(first, watch=on_first_delete) is not None
    raced = cleanup(cluster, "-g", unique_group, "--execute", "--archive", str(tmp_path / "race.json"))
    line = raced.single_error(1)
    assert f"{p.ids} gained a child" in line and "put back the" in line, line
    after = tree_of(zk_client, p.root)
    assert member in after
    del after[member]
    after[p.ids] = (after[p.ids][0], after[p.ids][1], [])
    assert after == before
