"""The group reader against the simulated members of `tests.helpers.fake_group`."""

from __future__ import annotations

from kazoo.client import KazooClient

from migrator.protocol.codecs import Authority, PublishedAuthority
from migrator.zk.group_reader import published_bootstrap, read_group, read_groups
from migrator.zk.paths import GroupPaths
from tests.helpers.fake_group import FakeGroup


def test_read_group_sees_every_kind_of_node(fake_group: FakeGroup, zk_client: KazooClient) -> None:
    p = fake_group.paths
    fake_group.add_bridge(f"{fake_group.group}_b1", embedded=False)
    fake_group.add_legacy(f"{fake_group.group}_l1")
    zk_client.create(p.member(f"{fake_group.group}_bad"), b"{not json", ephemeral=True)
    zk_client.create(p.owner(fake_group.topic, 0), f"{fake_group.group}_b1-0".encode(), makepath=True)
    zk_client.create(p.offset(fake_group.topic, 0), b"42", makepath=True)
    zk_client.create(p.offset(fake_group.topic, 1), b"garbage", makepath=True)
    zk_client.create(p.mode, b"kafak", makepath=True)

    view = read_group(zk_client, fake_group.group)

    assert [m.consumer_id for m in view.bridges] == [f"{fake_group.group}_b1"]
    assert [m.consumer_id for m in view.legacy] == [f"{fake_group.group}_l1"]
    assert [c.consumer_id for c in view.corrupt_members] == [f"{fake_group.group}_bad"]
    assert all(m.ctime_ms > 0 for m in view.members)
    assert view.mode.is_unknown and view.mode_mtime_ms
    assert dict(view.owners) == {(fake_group.topic, 0): f"{fake_group.group}_b1-0"}
    assert dict(view.offsets) == {(fake_group.topic, 0): 42}  # the corrupt offset is skipped


def test_read_groups_many_at_once(zk_client: KazooClient, unique_group: str) -> None:
    groups = [f"{unique_group}-{i}" for i in range(30)]
    for g in groups[:20]:
        zk_client.create(GroupPaths(g).offset("t", 0), b"7", makepath=True)
    views = read_groups(zk_client, groups)
    assert [views[g].exists for g in groups] == [True] * 20 + [False] * 10
    assert all(dict(views[g].offsets) == {("t", 0): 7} for g in groups[:20])


def test_the_published_authority_read_skips_silent_and_corrupt(zk_client: KazooClient, unique_group: str) -> None:
    """The group read's `migration/authority` nodes, which status, set-mode --wait, bootstrap discovery and the demo
    share."""
    p = GroupPaths(unique_group)
    assert read_group(zk_client, unique_group).authorities == {}  # no such group
    kafka = PublishedAuthority(Authority.KAFKA, 3, 1, reason="r", bootstrap="127.0.0.1:1")
    zk_client.create(p.published_authority("b2"), kafka.encode(), makepath=True)
    zk_client.create(p.published_authority("b1"), PublishedAuthority(Authority.ZOOKEEPER, 1, 1).encode())
    zk_client.create(p.published_authority("bad"), b"{not json")
    stat = zk_client.set(p.published_authority("b2"), kafka.encode())

    view = read_group(zk_client, unique_group)
    assert sorted(view.authorities) == ["b1", "b2"]
    assert (view.authorities["b2"], view.authority_mzxids["b2"]) == (kafka, stat.mzxid)
    assert [cid for cid in ["b2", "bad", "silent"] if cid in view.authorities] == ["b2"]
    assert published_bootstrap(zk_client, unique_group) == "127.0.0.1:1"
