"""`migrator console-consumer` on the real cluster: what it prints is exactly what the group counts as
processed, so runs continue where the previous one stopped, and every exit leaves ZooKeeper clean."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from migrator.cli.main import main
from migrator.errors import EXIT_OK, EXIT_REFUSED
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.zk.paths import GroupPaths
from tests.helpers import cli
from tests.helpers.kafka import make_topic, produce
from tests.helpers.wait import wait_until

ROOT = Path(__file__).resolve().parents[2]
FAST = ("rebalance.backoff.ms=300", "zookeeper.session.timeout.ms=4000")


def _argv(cluster: Any, group: str, *args: str) -> list[str]:
    argv = ["console-consumer", "-z", cluster.zookeeper, "-g", group, *args]
    for prop in FAST:
        argv += ["--consumer-property", prop]
    return argv


def run_cli(cluster: Any, group: str, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrator", *_argv(cluster, group, *args)],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT,
    )  # fmt: skip


class Background(cli.Background):
    """A console consumer in a subprocess whose stdout lines are collected as they arrive."""

    def __init__(self, cluster: Any, group: str, *args: str) -> None:
        super().__init__(*_argv(cluster, group, *args))


@pytest.fixture
def background() -> Iterator[list[Background]]:
    started: list[Background] = []
    yield started
    for b in started:
        b.kill()


def zk_offsets(zk: KazooClient, group: str, topic: str) -> dict[int, int]:
    path = GroupPaths(group).offsets_topic(topic)
    if not zk.exists(path):
        return {}
    return {int(p): int(zk.get(f"{path}/{p}")[0]) for p in zk.get_children(path)}


def assert_released(zk: KazooClient, group: str) -> None:
    paths = GroupPaths(group)
    assert not (zk.exists(paths.ids) and zk.get_children(paths.ids)), "ids left behind"
    if zk.exists(paths.owners):
        for topic in zk.get_children(paths.owners):
            assert zk.get_children(paths.owners_topic(topic)) == [], f"owners of {topic} left behind"


def records(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


# ---------------------------------------------------------------------------------------------- output


def test_text_prints_values(cluster, zk_client, unique_group, unique_topic) -> None:
    make_topic(cluster, unique_topic, partitions=1)
    values = [f"héllo {i}" for i in range(5)] + [b"\xffraw"]
    produce(cluster, unique_topic, values)
    done = run_cli(cluster, unique_group, "-t", unique_topic, "--from-beginning", "--max-messages", "6")
    assert done.returncode == EXIT_OK, done.stderr
    assert done.stdout.splitlines() == [*values[:5], "\ufffdraw"]
    assert zk_offsets(zk_client, unique_group, unique_topic) == {0: 6}
    assert_released(zk_client, unique_group)


def test_json_fields_and_base64(cluster, zk_client, unique_group, unique_topic) -> None:
    make_topic(cluster, unique_topic, partitions=1)
    produce(cluster, unique_topic, [("k1", "v1"), (None, "no key"), (b"\x80\x81", b"\xfe\xff")])
    done = run_cli(
        cluster, unique_group, "-t", unique_topic, "--from-beginning", "--max-messages", "3", "--format", "json"
    )
    assert done.returncode == EXIT_OK, done.stderr
    got = records(done.stdout)
    assert [r["offset"] for r in got] == [0, 1, 2]
    assert all(r["topic"] == unique_topic and r["partition"] == 0 for r in got)
    assert all(r["thread"].startswith(f"{unique_group}_") and r["thread"].endswith("-0") for r in got)
    assert all(isinstance(r["timestamp"], int) and r["timestamp"] > 0 for r in got)
    assert (got[0]["key"], got[0]["value"]) == ("k1", "v1")
    assert (got[1]["key"], got[1]["value"]) == (None, "no key")
    assert "key" not in got[2] and "value" not in got[2]
    assert base64.b64decode(got[2]["key_b64"]) == b"\x80\x81"
    assert base64.b64decode(got[2]["value_b64"]) == b"\xfe\xff"


def test_whitelist_with_several_streams(cluster, zk_client, unique_group, unique_topic) -> None:
    topics = [make_topic(cluster, f"{unique_topic}-{i}", partitions=2) for i in range(2)]
    for t in topics:
        produce(cluster, t, [f"{t}:{i}" for i in range(10)])
    done = run_cli(
        cluster, unique_group, "--whitelist", f"{unique_topic}-.*", "--streams", "3", "--from-beginning",
        "--max-messages", "20", "--format", "json",
    )  # fmt: skip
    assert done.returncode == EXIT_OK, done.stderr
    got = records(done.stdout)  # every line parses: threads never interleave
    assert sorted(r["value"] for r in got) == sorted(f"{t}:{i}" for t in topics for i in range(10))
    assert len({r["thread"] for r in got}) > 1


# ---------------------------------------------------------------------------------------------- stopping


def test_max_messages_continues_exactly(cluster, zk_client, unique_group, unique_topic) -> None:
    """Threads take no record beyond N, so the second run starts at record N+1: no loss, no duplicate."""
    make_topic(cluster, unique_topic, partitions=3)
    total = 60
    produce(cluster, unique_topic, [str(i) for i in range(total)])
    args = ("-t", unique_topic, "--streams", "2", "--from-beginning", "--format", "json")

    first = run_cli(cluster, unique_group, *args, "--max-messages", "23")
    assert first.returncode == EXIT_OK, first.stderr
    one = records(first.stdout)
    assert len(one) == 23
    last: dict[int, int] = {}
    for r in one:
        last[r["partition"]] = max(last.get(r["partition"], -1), r["offset"])
    # Exactly the printed records were committed, per partition, and the member left.
    assert zk_offsets(zk_client, unique_group, unique_topic) == {
        p: last.get(p, -1) + 1 for p in zk_offsets(zk_client, unique_group, unique_topic)
    }
    assert sum(zk_offsets(zk_client, unique_group, unique_topic).values()) == 23
    assert_released(zk_client, unique_group)

    second = run_cli(cluster, unique_group, *args, "--max-messages", str(total - 23))
    assert second.returncode == EXIT_OK, second.stderr
    two = records(second.stdout)
    seen = [(r["partition"], r["offset"]) for r in one + two]
    assert len(seen) == len(set(seen)) == total, "a record was printed twice or lost"
    assert sorted(int(r["value"]) for r in one + two) == list(range(total))
    assert sum(zk_offsets(zk_client, unique_group, unique_topic).values()) == total


def test_sigterm_commits_printed_and_releases(cluster, zk_client, unique_group, unique_topic, background) -> None:
    make_topic(cluster, unique_topic, partitions=2)
    produce(cluster, unique_topic, [str(i) for i in range(20)])
    args = ("-t", unique_topic, "--streams", "2", "--from-beginning", "--format", "json")
    run = Background(cluster, unique_group, *args)
    background.append(run)
    wait_until(lambda: len(run.lines) >= 20, 60, what="20 printed records")
    produce(cluster, unique_topic, [str(i) for i in range(20, 30)])  # consumed while it runs
    wait_until(lambda: len(run.lines) >= 30, 60, what="30 printed records")

    rc, err = run.terminate(signal.SIGTERM)
    assert rc == EXIT_OK, err
    assert "Traceback" not in err
    got = records("\n".join(run.lines))
    last: dict[int, int] = {}
    for r in got:
        last[r["partition"]] = max(last.get(r["partition"], -1), r["offset"])
    assert zk_offsets(zk_client, unique_group, unique_topic) == {p: o + 1 for p, o in last.items()}
    assert_released(zk_client, unique_group)


def test_sigint_also_exits_cleanly(cluster, zk_client, unique_group, unique_topic, background) -> None:
    make_topic(cluster, unique_topic, partitions=1)
    produce(cluster, unique_topic, ["a", "b", "c"])
    run = Background(cluster, unique_group, "-t", unique_topic, "--from-beginning")
    background.append(run)
    wait_until(lambda: len(run.lines) >= 3, 60, what="3 printed records")
    rc, err = run.terminate(signal.SIGINT)
    assert rc == EXIT_OK, err
    assert zk_offsets(zk_client, unique_group, unique_topic) == {0: 3}
    assert_released(zk_client, unique_group)


# ---------------------------------------------------------------------------------------------- bridge


def test_migration_registers_as_bridge(cluster, zk_client, unique_group, unique_topic, background) -> None:
    """Also with a group id the old [a-zA-Z0-9._-] rule refused: legal in Kafka and as a znode name, it
    reaches the ZooKeeper layout and the embedded member's client.id (= the consumerId) unchanged."""
    group = f"team:{unique_group} @eu"
    make_topic(cluster, unique_topic, partitions=2)
    produce(cluster, unique_topic, ["x", "y"])
    run = Background(
        cluster, group, "-t", unique_topic, "--from-beginning", "--migration", "-b", cluster.bootstrap_servers,
        "--consumer-property", "coordination.migration.poll.interval.ms=200",
    )  # fmt: skip
    background.append(run)
    paths = GroupPaths(group)

    def bridge_ids() -> list[str]:
        return zk_client.get_children(paths.migration_ids) if zk_client.exists(paths.migration_ids) else []

    (cid,) = wait_until(bridge_ids, 60, what="a migration/ids registration")
    assert zk_client.get_children(paths.ids) == [cid]
    assert json.loads(zk_client.get(paths.migration_member(cid))[0]) == json.loads(zk_client.get(paths.member(cid))[0])
    published = paths.published_authority(cid)
    wait_until(lambda: zk_client.exists(published), 60, what=published)
    assert "zookeeper" in zk_client.get(published)[0].decode()
    admin = KafkaAdmin(cluster.bootstrap_servers)

    def embedded_member_joined() -> bool:
        try:
            return cid in admin.describe_group(group).client_ids
        except KafkaUnavailable:  # a coordinator lookup outlasting one call on a loaded host
            return False

    wait_until(embedded_member_joined, 60, what="the embedded member in the Kafka group")
    wait_until(lambda: len(run.lines) >= 2, 60, what="2 printed records")

    rc, err = run.terminate()
    assert rc == EXIT_OK, err
    assert sorted(run.lines) == ["x", "y"]
    assert bridge_ids() == [] and not zk_client.exists(published)
    assert_released(zk_client, group)
    assert sum(zk_offsets(zk_client, group, unique_topic).values()) == 2


# ---------------------------------------------------------------------------------------------- refusals


def refused(cluster: Any, zk: KazooClient, group: str, capsys: Any, *args: str) -> str:
    assert main(_argv(cluster, group, *args)) == EXIT_REFUSED
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert not zk.exists(GroupPaths(group).root), "a refused run wrote to ZooKeeper"
    return err[0]


def test_bad_property_refused(cluster, zk_client, unique_group, unique_topic, capsys) -> None:
    err = refused(
        cluster, zk_client, unique_group, capsys, "-t", unique_topic, "--consumer-property", "auto.offset.rest=smallest"
    )
    assert "auto.offset.rest" in err and "auto.offset.reset" in err
    err = refused(
        cluster, zk_client, unique_group, capsys, "-t", unique_topic, "--consumer-property", "rebalance.max.retries=x"
    )
    assert "rebalance.max.retries" in err


def test_bad_properties_file_refused(cluster, zk_client, unique_group, unique_topic, capsys, tmp_path) -> None:
    props = tmp_path / "consumer.properties"
    props.write_text("auto.commit.enable=maybe\n")
    err = refused(cluster, zk_client, unique_group, capsys, "-t", unique_topic, "--consumer.config", str(props))
    assert "auto.commit.enable" in err


def test_migration_needs_bootstrap_servers(cluster, zk_client, unique_group, unique_topic, capsys) -> None:
    err = refused(cluster, zk_client, unique_group, capsys, "-t", unique_topic, "--migration")
    assert "--bootstrap-servers" in err


def test_invalid_group_refused(cluster, zk_client, unique_topic, capsys) -> None:
    err = refused(cluster, zk_client, "bad/group", capsys, "-t", unique_topic)
    assert "group" in err and "'/'" in err


def test_topic_selection_refused(cluster, zk_client, unique_group, unique_topic, capsys) -> None:
    refused(cluster, zk_client, unique_group, capsys)
    refused(cluster, zk_client, unique_group, capsys, "-t", unique_topic, "--whitelist", "x.*")
    err = refused(cluster, zk_client, unique_group, capsys, "-t", "bad topic")
    assert "topic" in err


def test_help_has_an_example() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "migrator", "console-consumer", "--help"],
        capture_output=True, text=True, timeout=60, cwd=ROOT
    )  # fmt: skip
    assert out.returncode == 0 and "Example:" in out.stdout and "--max-messages" in out.stdout


# ---------------------------------------------------------------------------- kafka-console-consumer options


def test_consumer_config_stands_in_for_z_and_g_and_property_prints_key_partition_offset(
    cluster, zk_client, unique_group, unique_topic, tmp_path
) -> None:
    make_topic(cluster, unique_topic, partitions=1)
    produce(cluster, unique_topic, [("k1", "v1"), (None, "v2")])
    props = tmp_path / "consumer.properties"
    props.write_text(f"zookeeper.connect={cluster.zookeeper}\ngroup.id={unique_group}\n" + "\n".join(FAST) + "\n")
    done = cli.run(
        "console-consumer", "--consumer.config", str(props), "-t", unique_topic, "--from-beginning",
        "--max-messages", "2", "--property", "print.key=true", "--property", "print.partition=true",
        "--property", "print.offset=true", "--property", "key.separator=|",
    )  # fmt: skip
    assert done.code == EXIT_OK, done.stderr
    assert done.stdout.splitlines() == ["Partition:0|Offset:0|k1|v1", "Partition:0|Offset:1|null|v2"]
    assert zk_offsets(zk_client, unique_group, unique_topic) == {0: 2}
    assert "unknown" in cli.run("console-consumer", "--consumer.config", str(props), "-t", unique_topic,
                                "--property", "print.keys=true").single_error(2)  # fmt: skip


def test_without_a_group_it_commits_nothing_and_leaves_no_group(cluster, zk_client, unique_topic) -> None:
    make_topic(cluster, unique_topic, partitions=2)
    produce(cluster, unique_topic, ["a", "b"], partition=0)
    before = set(zk_client.get_children("/consumers"))
    done = cli.run("console-consumer", "-z", cluster.zookeeper, "-t", unique_topic, "--from-beginning",
                   "--timeout-ms", "3000", *[a for p in FAST for a in ("--consumer-property", p)])  # fmt: skip
    assert done.code == EXIT_OK, done.stderr
    assert done.stdout.splitlines() == ["a", "b"]  # --timeout-ms ended it
    assert set(zk_client.get_children("/consumers")) - before == set()


def test_partition_and_offset_read_one_partition_without_a_group(cluster, zk_client, unique_topic) -> None:
    make_topic(cluster, unique_topic, partitions=2)
    produce(cluster, unique_topic, ["p0"], partition=0)
    produce(cluster, unique_topic, ["a", "b", "c"], partition=1)
    before = set(zk_client.get_children("/consumers"))
    done = cli.run("console-consumer", "-b", cluster.bootstrap_servers, "-t", unique_topic, "--partition", "1",
                   "--offset", "1", "--timeout-ms", "3000", "--property", "print.offset=true")  # fmt: skip
    assert done.code == EXIT_OK, done.stderr
    assert done.stdout.splitlines() == ["Offset:1\tb", "Offset:2\tc"]
    assert set(zk_client.get_children("/consumers")) == before
