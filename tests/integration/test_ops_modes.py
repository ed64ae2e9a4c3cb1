"""set-mode / get-mode / history on the real cluster: every refusal leaves ZooKeeper as it was."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kazoo.client import KazooClient

from migrator.cli.main import main
from migrator.errors import RefusedError
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.ops import modes
from migrator.protocol.codecs import AuditEntry, Mode
from migrator.zk.paths import GroupPaths
from tests.helpers.fake_group import FakeGroup
from tests.helpers.wait import wait_until


def snapshot(zk: KazooClient, group: str) -> tuple[object, list[str]]:
    p = GroupPaths(group)
    mode = zk.get(p.mode) if zk.exists(p.mode) else None
    audit = zk.get_children(p.audit) if zk.exists(p.audit) else []
    return (mode[0], mode[1].version) if mode else None, sorted(audit)


def run(cluster: Any, *args: str, bootstrap: bool = True) -> int:
    argv = [*args, "-z", cluster.zookeeper]
    if bootstrap:
        argv += ["-b", cluster.bootstrap_servers]
    return main(argv)


def kafka_members(admin: KafkaAdmin, group: str) -> int:
    """How many members the Kafka group has; 0 while a new cluster's first coordinator lookup outlasts one
    10 s wait (seen on a loaded host with three brokers)."""
    try:
        return len(admin.describe_group(group).members)
    except KafkaUnavailable:
        return 0


def refused(cluster: Any, zk: KazooClient, fake: FakeGroup, mode: str, capsys: Any, **kw: bool) -> str:
    before = snapshot(zk, fake.group)
    assert run(cluster, "set-mode", mode, "-g", fake.group, **kw) == 2
    assert snapshot(zk, fake.group) == before, "a refused set-mode wrote something"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")
    return err[0]


def test_legacy_member_refuses_kafka(cluster, zk_client, fake_group, capsys) -> None:
    fake_group.add_bridge(f"{fake_group.group}_b1")
    fake_group.add_legacy(f"{fake_group.group}_old")
    fake_group.wait_kafka_members({f"{fake_group.group}_b1"})
    err = refused(cluster, zk_client, fake_group, "kafka", capsys)
    assert "legacy connector(s) registered" in err and f"{fake_group.group}_old" in err


def test_missing_embedded_member_refuses_kafka(cluster, zk_client, fake_group, capsys) -> None:
    fake_group.add_bridge(f"{fake_group.group}_b1")
    fake_group.add_bridge(f"{fake_group.group}_b2", embedded=False)
    fake_group.wait_kafka_members({f"{fake_group.group}_b1"})
    err = refused(cluster, zk_client, fake_group, "kafka", capsys)
    assert "embedded member is not in the Kafka group" in err and f"{fake_group.group}_b2" in err


def test_group_larger_than_group_max_size_refuses_kafka(cluster_factory, unique_group, unique_topic, capsys) -> None:
    from tests.helpers.kafka import make_topic
    from tests.helpers.zk import zk_client as open_zk

    small = cluster_factory(group_max_size=2)
    make_topic(small, unique_topic, partitions=3)
    with FakeGroup(small, unique_group, unique_topic) as fake:
        for i in range(3):
            fake.add_bridge(f"{unique_group}_b{i}")
        admin = KafkaAdmin(small.bootstrap_servers)
        # two join, the third is turned away with GROUP_MAX_SIZE_REACHED
        wait_until(lambda: kafka_members(admin, unique_group) == 2, 60, interval=0.3, what="two bridges in the group")
        with open_zk(small) as zk:
            err = refused(small, zk, fake, "kafka", capsys)
        assert "group.max.size is 2" in err


def test_plain_kafka_consumer_refuses_zookeeper(cluster, zk_client, fake_group, capsys) -> None:
    zk_client.create(fake_group.paths.mode, b"kafka", makepath=True)
    fake_group.add_bridge(f"{fake_group.group}_b1")
    fake_group.add_kafka_member("plain-consumer")
    fake_group.wait_kafka_members({f"{fake_group.group}_b1", "plain-consumer"})
    err = refused(cluster, zk_client, fake_group, "zookeeper", capsys)
    assert "plain Kafka consumer(s)" in err and "plain-consumer" in err and "dual ownership" in err
    assert zk_client.get(fake_group.paths.mode)[0] == b"kafka"


def test_unknown_value_writes_nothing(cluster, zk_client, fake_group, capsys) -> None:
    fake_group.add_bridge(f"{fake_group.group}_b1", embedded=False)
    err = refused(cluster, zk_client, fake_group, "kafak", capsys)
    assert err == "error: mode must be kafka or zookeeper, not 'kafak'; nothing was written"


@pytest.mark.parametrize("group", ["..", "a/b", "a\x01b"])
def test_bad_group_name_writes_nothing(cluster, zk_client, group, capsys) -> None:
    before = sorted(zk_client.get_children("/consumers")) if zk_client.exists("/consumers") else []
    assert run(cluster, "set-mode", "zookeeper", "-g", group, "--force") == 2
    after = sorted(zk_client.get_children("/consumers")) if zk_client.exists("/consumers") else []
    assert before == after
    assert capsys.readouterr().err.startswith("error: group name")


def test_unreachable_zookeeper_fails_fast(capsys) -> None:
    started = time.monotonic()
    assert main(["set-mode", "zookeeper", "-z", "127.0.0.1:1", "-g", "g", "--connect-timeout", "2"]) == 1
    assert time.monotonic() - started < 6
    assert capsys.readouterr().err.strip() == "error: ZooKeeper at 127.0.0.1:1 did not answer within 2s"


def test_unreachable_brokers_refuse_kafka(cluster, zk_client, fake_group, capsys) -> None:
    fake_group.add_bridge(f"{fake_group.group}_b1", embedded=False)
    before = snapshot(zk_client, fake_group.group)
    started = time.monotonic()
    code = main(["set-mode", "kafka", "-z", cluster.zookeeper, "-g", fake_group.group, "-b", "127.0.0.1:1",
                 "--connect-timeout", "2"])  # fmt: skip
    assert code == 2 and time.monotonic() - started < 10
    assert snapshot(zk_client, fake_group.group) == before
    assert "the Kafka group cannot be checked" in capsys.readouterr().err


def test_switch_is_audited_and_dry_run_writes_nothing(cluster, zk_client, fake_group, capsys) -> None:
    b1, b2 = fake_group.add_bridge(f"{fake_group.group}_b1"), fake_group.add_bridge(f"{fake_group.group}_b2")
    fake_group.wait_kafka_members({b1, b2})

    before = snapshot(zk_client, fake_group.group)
    assert run(cluster, "set-mode", "kafka", "-g", fake_group.group, "--dry-run") == 0
    assert snapshot(zk_client, fake_group.group) == before
    assert "preflight: ok" in capsys.readouterr().out

    assert run(cluster, "set-mode", "kafka", "-g", fake_group.group, "--reason", "canary ok") == 0
    assert zk_client.get(fake_group.paths.mode)[0] == b"kafka"
    assert run(cluster, "history", "-g", fake_group.group, "--json", bootstrap=False) == 0
    out = capsys.readouterr().out
    entries = json.loads(out[out.index("[") :])
    assert [(e["from"], e["to"], e["reason"], e["forced"]) for e in entries] == [(None, "kafka", "canary ok", False)]
    assert "@" in entries[0]["who"]

    assert run(cluster, "get-mode", "-g", fake_group.group, bootstrap=False) == 0
    assert f"{fake_group.group}: kafka" in capsys.readouterr().out


def test_force_writes_and_is_recorded(cluster, zk_client, fake_group, capsys) -> None:
    fake_group.add_legacy(f"{fake_group.group}_old")
    assert run(cluster, "set-mode", "kafka", "-g", fake_group.group, "--force", "--reason", "drill") == 0
    assert zk_client.get(fake_group.paths.mode)[0] == b"kafka"
    [(_, entry)] = modes.history(zk_client, fake_group.group)
    assert isinstance(entry, AuditEntry) and entry.forced and entry.reason == "drill"


def test_concurrent_change_is_detected(cluster, zk_client, fake_group, monkeypatch) -> None:
    fake_group.add_bridge(f"{fake_group.group}_b1", embedded=False)
    zk_client.create(fake_group.paths.mode, b"kafka", makepath=True)
    real_read_group = modes.read_group_with_layout

    def racing_read_group(zk: KazooClient, group: str) -> Any:
        read = real_read_group(zk, group)
        zk_client.set(fake_group.paths.mode, b"kafka")  # another operator writes between read and write
        return read

    monkeypatch.setattr(modes, "read_group_with_layout", racing_read_group)
    with pytest.raises(RefusedError, match="changed while the preflight ran"):
        # forced past "Kafka cannot be checked" (no admin): the version check still guards the write
        modes.set_mode(zk_client, fake_group.group, Mode.ZOOKEEPER, admin=None, who="test", force=True)
    assert zk_client.get(fake_group.paths.mode)[1].version == 1
    assert snapshot(zk_client, fake_group.group)[1] == []


def test_wait_reports_the_pause(cluster, zk_client, fake_group, capsys) -> None:
    bridges = [fake_group.add_bridge(f"{fake_group.group}_b{i}") for i in range(2)]
    fake_group.wait_kafka_members(set(bridges))
    with fake_group.following(zk_client, bridges):
        assert run(cluster, "set-mode", "kafka", "-g", fake_group.group, "--wait", "--timeout", "20") == 0
    out, err = capsys.readouterr()
    assert "switch complete: every bridge obeys kafka; pause" in out
    assert "waiting" not in err  # no progress line when stderr is not a terminal
    pause = float(out.rsplit("pause ", 1)[1].rstrip().rstrip("s"))
    assert 0.2 < pause < 20


def test_wait_times_out_with_what_is_missing(cluster, zk_client, fake_group, capsys) -> None:
    b1 = fake_group.add_bridge(f"{fake_group.group}_b1")
    fake_group.wait_kafka_members({b1})
    assert run(cluster, "set-mode", "kafka", "-g", fake_group.group, "--wait", "--timeout", "1") == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: the switch to kafka did not complete within 1s")
    assert b1 in err and "3 partition(s) without owner" in err


def test_set_mode_kafka_on_three_brokers(cluster_factory, unique_group, unique_topic) -> None:
    """The preflight reads group.max.size from every broker. Kafka refuses two BROKER resources in one
    DescribeConfigs, so with more than one broker `set-mode kafka` used to refuse every group ("the Kafka
    group cannot be checked"); found by the soak (benchmarks/soak.py). Run as an operator runs it."""
    import subprocess
    import sys

    from tests.helpers.kafka import make_topic

    three = cluster_factory(brokers=3)
    make_topic(three, unique_topic, partitions=3, replication=3)
    with FakeGroup(three, unique_group, unique_topic) as fake:
        fake.add_bridge(f"{unique_group}_b0")
        admin = KafkaAdmin(three.bootstrap_servers)
        wait_until(lambda: kafka_members(admin, unique_group) == 1, 60, interval=0.3, what="the bridge in the group")
        cmd = [sys.executable, "-m", "migrator", "set-mode", "kafka", "-g", unique_group, "-z", three.zookeeper,
               "-b", three.bootstrap_servers, "--reason", "three brokers"]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"{unique_group}: absent -> kafka" in done.stdout
