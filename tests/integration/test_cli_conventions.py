"""The Kafka-tools conventions of the command line, driven as an operator types them (a subprocess)
against the session cluster: connection settings from a --command-config file or the environment,
--bootstrap-server, --json on every writer, one dry-run rule, `groups` and `offsets reset`."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from typing import Any

import pytest
from kazoo.client import KazooClient

from migrator.zk.paths import GroupPaths
from tests.helpers.cli import ROOT, CliRun, group_state, run
from tests.integration.test_ops_offsets import LEGACY_STOPPED_AT, kafka_committed, legacy_group


def zk_offsets(zk: KazooClient, group: str, topic: str) -> dict[int, int]:
    return {p: int(zk.get(GroupPaths(group).offset(topic, p))[0]) for p in range(3)}


def ok_json(result: CliRun) -> Any:
    assert result.code == 0, result.stderr
    return json.loads(result.stdout)


def test_connection_comes_from_command_config_or_environment(cluster, zk_client, unique_group, unique_topic, tmp_path):
    legacy_group(cluster, zk_client, unique_group, unique_topic)
    config = tmp_path / "admin.properties"
    config.write_text(
        f"zookeeper.connect={cluster.zookeeper}\nbootstrap.servers={cluster.bootstrap_servers}\nclient.id=ops\n"
    )
    expected = [(r, LEGACY_STOPPED_AT[r], None) for r in range(3)]

    def rows(result: CliRun) -> list[tuple[int, int, int | None]]:
        return [(r["partition"], r["zookeeper"], r["kafka"]) for r in ok_json(result)]

    assert rows(run("offsets", "diff", "-g", unique_group, "--json", "--command-config", str(config))) == expected
    env = {"MIGRATOR_ZOOKEEPER": cluster.zookeeper, "MIGRATOR_BOOTSTRAP_SERVER": cluster.bootstrap_servers}
    assert rows(run("offsets", "diff", "-g", unique_group, "--json", env=env)) == expected
    assert rows(run("offsets", "diff", "-g", unique_group, "--json", "-z", cluster.zookeeper,
                    "--bootstrap-server", cluster.bootstrap_servers)) == expected  # fmt: skip
    # the command line wins over the environment, which wins over the file
    bad_env = {"MIGRATOR_ZOOKEEPER": "127.0.0.1:1", "MIGRATOR_CONNECT_TIMEOUT": "1"}
    assert run("get-mode", "-g", unique_group, "-z", cluster.zookeeper, env=bad_env).code == 0
    assert run("get-mode", "-g", unique_group, "--command-config", str(config), env=bad_env).single_error(1)

    line = run("get-mode", "-g", unique_group).single_error(2)
    assert "--zookeeper is required" in line and "MIGRATOR_ZOOKEEPER" in line


def test_set_mode_json_for_dry_run_refusal_and_write(cluster, zk_client, fake_group) -> None:
    zb = ("-z", cluster.zookeeper, "-b", cluster.bootstrap_servers, "-g", fake_group.group, "--json")
    b1 = fake_group.add_bridge(f"{fake_group.group}_b1")
    fake_group.wait_kafka_members({b1})

    dry = ok_json(run("set-mode", "kafka", *zb, "--dry-run"))
    assert (dry["from"], dry["to"], dry["dry_run"], dry["preflight"], dry["written"]) == (
        "absent", "kafka", True, "ok", False,
    )  # fmt: skip
    assert not zk_client.exists(fake_group.paths.mode)

    fake_group.add_legacy(f"{fake_group.group}_old")
    refused = run("set-mode", "kafka", *zb, "--dry-run")
    assert refused.code == 2  # a dry run exits as the write would
    doc = json.loads(refused.stdout)
    assert doc["preflight"] == "refused" and any("legacy connector" in r for r in doc["refusals"])

    written = ok_json(run("set-mode", "kafka", *zb, "--force", "--reason", "json"))
    assert (written["written"], written["forced"]) == (True, True)
    assert written["audit"].startswith(fake_group.paths.audit)
    assert zk_client.get(fake_group.paths.mode)[0] == b"kafka"


def test_offsets_writers_are_dry_runs_unless_execute_and_report_json(
    cluster, zk_client, unique_group, unique_topic, tmp_path
) -> None:
    legacy_group(cluster, zk_client, unique_group, unique_topic)
    zb = ("-z", cluster.zookeeper, "-b", cluster.bootstrap_servers, "-g", unique_group, "--json")
    sync = ("offsets", "sync", *zb, "--from", "zookeeper", "--to", "kafka")
    dry = ok_json(run(*sync))
    assert (dry["dry_run"], dry["written"]) == (True, False)
    assert {r["partition"]: r["offset"] for r in dry["offsets"]} == LEGACY_STOPPED_AT
    assert kafka_committed(cluster, unique_group, unique_topic) == {0: -1, 1: -1, 2: -1}
    assert ok_json(run(*sync, "--execute"))["written"] is True
    assert kafka_committed(cluster, unique_group, unique_topic) == LEGACY_STOPPED_AT

    path = tmp_path / "o.csv"
    path.write_text(f"topic,partition,offset\n{unique_topic},0,1\n")
    imp = ("offsets", "import", *zb, "--store", "zookeeper", "-i", str(path))
    assert ok_json(run(*imp, "--dry-run"))["offsets"] == [{"topic": unique_topic, "partition": 0, "offset": 1}]
    assert zk_offsets(zk_client, unique_group, unique_topic) == LEGACY_STOPPED_AT
    assert "contradict" in run(*imp, "--dry-run", "--execute").single_error(2)
    assert ok_json(run(*imp, "--execute"))["written"] is True
    assert zk_offsets(zk_client, unique_group, unique_topic)[0] == 1


def test_groups_lists_zookeeper_and_kafka_groups_with_their_state(cluster, zk_client, fake_group, unique_topic):
    odd = f"team:{fake_group.group} @eu"  # legal in Kafka and ZooKeeper
    zk_client.create(GroupPaths(odd).offset(fake_group.topic, 0), b"1", makepath=True)
    fake_group.add_legacy(f"{fake_group.group}_old")
    plain = f"{fake_group.group}-plain"
    fake_group.add_kafka_member(plain)
    fake_group.wait_kafka_members({plain})

    rows = {r["group"]: r for r in ok_json(run("groups", "-z", cluster.zookeeper, "--json"))}
    assert (rows[odd]["state"], rows[odd]["mode"], rows[odd]["kafka_state"]) == ("inactive", "absent", None)
    assert (rows[fake_group.group]["state"], rows[fake_group.group]["legacy"]) == ("legacy", 1)

    both = {r["group"]: r for r in ok_json(run("groups", "-z", cluster.zookeeper, "-b", cluster.bootstrap_servers,
                                               "--json"))}  # fmt: skip
    assert both[fake_group.group]["kafka_members"] == 1
    text = run("groups", "-z", cluster.zookeeper).stdout.splitlines()
    assert text[0].split() == ["group", "state", "mode", "legacy", "bridges", "kafka_state", "kafka_members", "cutover"]
    assert any(line.startswith(odd) and "inactive" in line for line in text)


@pytest.fixture
def stopped_group(cluster, zk_client, unique_group, unique_topic) -> tuple[str, str]:
    """A group that committed 5, 7, 0 to ZooKeeper on a topic of 10 records per partition, then stopped."""
    legacy_group(cluster, zk_client, unique_group, unique_topic)
    return unique_group, unique_topic


def test_offsets_reset_has_kafka_consumer_groups_semantics(cluster, zk_client, stopped_group) -> None:
    group, topic = stopped_group
    base = ("offsets", "reset", "-z", cluster.zookeeper, "-b", cluster.bootstrap_servers, "-g", group)

    dry = run(*base, "--topic", topic, "--to-earliest")
    assert dry.code == 0 and "dry run: 3 partitions; add --execute" in dry.stdout
    assert zk_offsets(zk_client, group, topic) == LEGACY_STOPPED_AT

    def reset(*how: str) -> dict[int, int]:
        doc = ok_json(run(*base, *how, "--execute", "--json"))
        assert doc["written"] is True
        return zk_offsets(zk_client, group, topic)

    assert reset("--all-topics", "--to-earliest") == {0: 0, 1: 0, 2: 0}
    assert reset("--topic", f"{topic}:1,2", "--shift-by", "3") == {0: 0, 1: 3, 2: 3}
    assert reset("--topic", topic, "--to-offset", "100") == {0: 10, 1: 10, 2: 10}  # clamped to the log end
    assert reset("--topic", f"{topic}:0", "--shift-by", "-4") == {0: 6, 1: 10, 2: 10}
    assert reset("--topic", topic, "--to-datetime", "2000-01-01T00:00:00Z") == {0: 0, 1: 0, 2: 0}
    assert reset("--topic", topic, "--to-datetime", "2999-01-01T00:00:00Z") == {0: 10, 1: 10, 2: 10}

    kafka = ok_json(run(*base, "--store", "kafka", "--topic", topic, "--to-offset", "4", "--execute", "--json"))
    assert [(r["partition"], r["current"], r["offset"]) for r in kafka["offsets"]] == [(0, None, 4), (1, None, 4),
                                                                                       (2, None, 4)]  # fmt: skip
    assert kafka_committed(cluster, group, topic) == {0: 4, 1: 4, 2: 4}

    assert "exactly one of" in run(*base, "--topic", topic, "--to-latest", "--to-earliest").single_error(2)
    assert "no partition 7" in run(*base, "--topic", f"{topic}:7", "--to-latest").single_error(2)


def test_offsets_reset_is_refused_while_the_group_has_live_members(cluster, zk_client, fake_group) -> None:
    fake_group.add_legacy(f"{fake_group.group}_old")
    zk_client.create(GroupPaths(fake_group.group).offset(fake_group.topic, 0), b"0", makepath=True)
    base = ("offsets", "reset", "-z", cluster.zookeeper, "-b", cluster.bootstrap_servers, "-g", fake_group.group)
    for mode in ((), ("--execute",)):  # the dry run refuses exactly as the write does
        line = run(*base, "--topic", fake_group.topic, "--to-latest", *mode).single_error(2)
        assert "live member(s)" in line and f"{fake_group.group}_old" in line
    assert zk_client.get(GroupPaths(fake_group.group).offset(fake_group.topic, 0))[0] == b"0"


def test_wait_shows_a_progress_line_on_a_terminal(cluster, zk_client, fake_group) -> None:
    bridges = [fake_group.add_bridge(f"{fake_group.group}_b{i}") for i in range(2)]
    fake_group.wait_kafka_members(set(bridges))
    controller, terminal = pty.openpty()
    argv = ["set-mode", "kafka", "-z", cluster.zookeeper, "-b", cluster.bootstrap_servers, "-g", fake_group.group]
    with fake_group.following(zk_client, bridges):
        proc = subprocess.Popen([sys.executable, "-m", "migrator", *argv, "--wait", "--timeout", "30"],
                                stdout=subprocess.PIPE, stderr=terminal, text=True, cwd=ROOT)  # fmt: skip
        out, _ = proc.communicate(timeout=120)
    os.close(terminal)
    screen = _drain(controller)
    assert proc.returncode == 0, screen
    assert "switch complete" in out
    assert "\r\x1b[Kwaiting " in screen and "bridge(s) not yet obeying" in screen
    assert screen.endswith("\r\x1b[K")  # the line is cleared before the result is printed


def _drain(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the terminal's other end is closed and everything was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode()


def test_acl_protect_dry_run_shows_the_acls_and_writes_nothing(cluster, zk_client, unique_group) -> None:
    zk_client.create(GroupPaths(unique_group).ids, makepath=True)
    before = group_state(zk_client, unique_group)
    admin = ("--admin", "digest:ops:s3cret")
    dry = run("acl", "protect", "-z", cluster.zookeeper, "-g", unique_group, *admin, "--dry-run")
    assert dry.code == 0, dry.stderr
    assert f"/consumers/{unique_group}/migration/audit  world:anyone=--r--, digest:ops:" in dry.stdout
    assert dry.stdout.splitlines()[-1].startswith(f"dry run: {unique_group}: nothing written")
    assert group_state(zk_client, unique_group) == before
    assert zk_client.get_acls(GroupPaths(unique_group).root)[0][0].id.scheme == "world"
