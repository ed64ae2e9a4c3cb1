"""acl protect: only the admin identity switches the mode; consumers keep every right they use."""

from __future__ import annotations

from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from migrator.cli.main import main
from migrator.protocol.codecs import Registration
from migrator.zk.paths import GroupPaths
from tests.helpers.zk import zk_client as open_zk

ADMIN = "digest:ops:s3cret"


def protect(cluster: Any, group: str) -> None:
    assert main(["acl", "protect", "-z", cluster.zookeeper, "-g", group, "--admin", ADMIN]) == 0


def test_set_mode_needs_the_admin_identity(cluster: Any, zk_client: KazooClient, unique_group: str, capsys) -> None:
    p = GroupPaths(unique_group)
    zk_client.create(p.member(f"{unique_group}_b1"), Registration({"t": 1}).encode(), makepath=True, ephemeral=True)
    zk_client.create(p.migration_member(f"{unique_group}_b1"), Registration({"t": 1}).encode(), makepath=True,
                     ephemeral=True)  # fmt: skip
    protect(cluster, unique_group)
    capsys.readouterr()

    assert main(["set-mode", "zookeeper", "-z", cluster.zookeeper, "-g", unique_group]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after `brokers: /brokers/ids (...)`
    assert err == (
        f"error: not authorised by ZooKeeper to write {p.mode}: run with --zk-auth digest:<admin user>:<password> "
        "(the identity `acl protect` named); nothing was written"
    )
    assert zk_client.exists(p.mode) is None and zk_client.get_children(p.audit) == []

    assert main(["set-mode", "zookeeper", "-z", cluster.zookeeper, "-g", unique_group, "--zk-auth", ADMIN]) == 0
    assert zk_client.get(p.mode)[0] == b"zookeeper"
    assert len(zk_client.get_children(p.audit)) == 1

    # the mode node set-mode created inherits the protection: world can read it, not change or delete it
    with pytest.raises(NoAuthError):
        zk_client.set(p.mode, b"kafka")
    with pytest.raises(NoAuthError):
        zk_client.delete(p.mode)
    assert main(["set-mode", "kafka", "-z", cluster.zookeeper, "-g", unique_group, "--force"]) == 2
    assert zk_client.get(p.mode)[0] == b"zookeeper"
    assert main(["history", "-z", cluster.zookeeper, "-g", unique_group]) == 0
    assert "ops (digest)  absent -> zookeeper" in capsys.readouterr().out


def test_consumers_keep_every_right_a_bridge_uses(cluster: Any, unique_group: str) -> None:
    protect(cluster, unique_group)
    p = GroupPaths(unique_group)
    cid = f"{unique_group}_b1"
    with open_zk(cluster) as zk:  # an unauthenticated consumer
        data = Registration({"t": 1}).encode()
        zk.create(p.member(cid), data, ephemeral=True)
        zk.create(p.migration_member(cid), data, ephemeral=True)
        zk.create(p.published_authority(cid), b"{}", ephemeral=True)
        zk.set(p.published_authority(cid), b'{"authority":"zookeeper"}')
        zk.ensure_path(p.owners_topic("t"))
        zk.create(p.owner("t", 0), f"{cid}-0".encode(), ephemeral=True)
        zk.ensure_path(p.offsets_topic("t"))
        zk.create(p.offset("t", 0), b"1")
        zk.set(p.offset("t", 0), b"2")
        assert zk.exists(p.mode) is None or zk.get(p.mode)
        zk.get_children(p.audit)
        zk.delete(p.owner("t", 0))
        zk.delete(p.migration_member(cid))
        with pytest.raises(NoAuthError):
            zk.create(p.mode, b"kafka")
        with pytest.raises(NoAuthError):
            zk.create(f"{p.audit}/entry-", b"{}", sequence=True)
        with pytest.raises(NoAuthError):
            zk.delete(p.audit)


def test_acl_show(cluster: Any, unique_group: str, capsys) -> None:
    protect(cluster, unique_group)
    capsys.readouterr()
    assert main(["acl", "show", "-z", cluster.zookeeper, "-g", unique_group]) == 0
    lines = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    p = GroupPaths(unique_group)
    assert lines[p.migration].startswith("world:anyone=--r--, digest:ops:")
    assert lines[p.ids].startswith("world:anyone=cdrw-, digest:ops:")
    assert lines[p.mode] == "(absent)"
