"""Each read-only command reads the group in one pipelined pass, whatever its dialect: its existence, mode
(and mode version), fence, members, owners and offsets all come from that pass; `cutover` decides each step
over one such pass. Counted on the real ZooKeeper as an operator runs the command (a subprocess whose kazoo
client counts its round trips; Kafka's requests are not counted, nor is an ACL write)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.security import Permissions

from migrator.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED
from migrator.protocol.dialect import Dialect
from migrator.zk.paths import GroupPaths
from tests.helpers.cli import run
from tests.helpers.kafka import make_topic
from tests.helpers.layouts import write_group
from tests.helpers.round_trips import counting_env, read_counts

PARTITIONS = 8
MEMBERS = 4
ONE_PASS = 3
ADMIN = "digest:ops:s3cret"
"""The group reader's pipelined levels: listings, the mode node and the fence, then members and folders, then
owners and offsets. Whether the group exists comes with the first."""


@pytest.fixture(params=list(Dialect), ids=lambda d: d.value)
def legacy_group(request: Any, cluster: Any, zk_client: KazooClient, unique_group: str, unique_topic: str) -> Dialect:
    """`unique_group` with live members of the parametrised dialect owning every partition of `unique_topic`
    (a Scala group with ZooKeeper offsets too)."""
    dialect: Dialect = request.param
    topic = make_topic(cluster, unique_topic, partitions=PARTITIONS)
    write_group(zk_client, unique_group, topic, PARTITIONS, MEMBERS, dialect)
    if dialect is Dialect.SCALA:
        for partition in range(PARTITIONS):
            zk_client.create(GroupPaths(unique_group).offset(topic, partition), b"5", makepath=True)
    return dialect


def counted(tmp_path: Path, *args: str) -> tuple[Any, dict[str, Any]]:
    done = run(*args, env=counting_env(tmp_path))
    return done, read_counts(tmp_path)


def test_status_reads_a_group_in_one_pipelined_pass_whatever_its_dialect(
    cluster: Any, unique_group: str, tmp_path: Path, legacy_group: Dialect
) -> None:
    done, counts = counted(tmp_path, "status", "-z", cluster.zookeeper, "-g", unique_group,
                           "-b", cluster.bootstrap_servers, "--json")  # fmt: skip

    assert done.code == EXIT_OK, done
    report = json.loads(done.stdout)
    assert report["dialect"] == legacy_group.value and len(report["partitions"]) == PARTITIONS, report
    assert all(row["owner"] for row in report["partitions"]), report["partitions"]
    assert report["fenced"] is False and report["cutover"] is None, report
    assert counts["writes"] == [], counts["writes"]  # status is read-only
    assert counts["round_trips"] == ONE_PASS, counts


def test_the_set_mode_preflight_reads_a_group_in_one_pipelined_pass_whatever_its_dialect(
    cluster: Any, unique_group: str, tmp_path: Path, legacy_group: Dialect
) -> None:
    done, counts = counted(tmp_path, "set-mode", "kafka", "-z", cluster.zookeeper, "-g", unique_group,
                           "-b", cluster.bootstrap_servers, "--dry-run", "--json")  # fmt: skip

    assert done.code == EXIT_REFUSED, done  # legacy members: the preflight refuses, as the write would
    report = json.loads(done.stdout)
    assert report["dialect"] == legacy_group.value and report["preflight"] == "refused", report
    assert counts["writes"] == [], counts["writes"]
    assert counts["round_trips"] == ONE_PASS, counts


def test_offsets_diff_reads_a_group_in_one_pipelined_pass_whatever_its_dialect(
    cluster: Any, unique_group: str, tmp_path: Path, legacy_group: Dialect
) -> None:
    done, counts = counted(tmp_path, "offsets", "diff", "-z", cluster.zookeeper, "-g", unique_group,
                           "-b", cluster.bootstrap_servers, "--json")  # fmt: skip

    if legacy_group is Dialect.SCALA:
        assert done.code == EXIT_OK, done
        rows = json.loads(done.stdout)
        assert len(rows) == PARTITIONS and all(r["zookeeper"] == 5 for r in rows), rows
    else:  # pykafka keeps no offsets in ZooKeeper: refused, after the same one pass
        assert done.code == EXIT_REFUSED and "keeps no offsets in ZooKeeper" in done.stderr, done
    assert counts["writes"] == [], counts["writes"]
    assert counts["round_trips"] == ONE_PASS, counts


def test_cutover_dry_run_plans_over_one_pipelined_pass_whatever_its_dialect(
    cluster: Any, unique_group: str, tmp_path: Path, legacy_group: Dialect
) -> None:
    done, counts = counted(tmp_path, "cutover", "-z", cluster.zookeeper, "-g", unique_group,
                           "-b", cluster.bootstrap_servers, "--zk-auth", ADMIN, "--dry-run", "--json")  # fmt: skip

    assert done.code == EXIT_OK, done
    plan = json.loads(done.stdout)
    assert plan["dialect"] == legacy_group.value and plan["fenced"] is False, plan
    carried = ["carry-offsets"] if legacy_group is Dialect.SCALA else []  # pykafka's offsets are in Kafka already
    assert plan["planned"] == ["fence", "wait-empty", *carried, "record-mode"], plan
    assert counts["writes"] == [], counts["writes"]
    assert counts["round_trips"] == ONE_PASS, counts


def test_cutover_decides_each_step_and_each_poll_of_its_wait_over_one_pipelined_pass(
    cluster: Any, zk_client: KazooClient, unique_group: str, tmp_path: Path, legacy_group: Dialect
) -> None:
    """Fence (decided over one pass), then wait (decided over a second), whose one poll (a third) finds the
    members still registered: --timeout 0 stops there, fenced."""
    done, counts = counted(tmp_path, "cutover", "-z", cluster.zookeeper, "-g", unique_group,
                           "-b", cluster.bootstrap_servers, "--zk-auth", ADMIN, "--timeout", "0")  # fmt: skip

    assert done.code == EXIT_FAILED, done
    assert f"{MEMBERS} legacy member(s) registered, {PARTITIONS} owner node(s) left" in done.stderr, done
    assert done.stdout.startswith("fenced:"), done
    acls, _ = zk_client.get_acls(GroupPaths(unique_group).ids)
    assert not any(acl.id.scheme == "world" and acl.perms & Permissions.CREATE for acl in acls), acls
    assert counts["round_trips"] == 3 * ONE_PASS, counts


def test_get_mode_reads_a_group_in_one_pipelined_pass_whatever_its_dialect(
    cluster: Any, zk_client: KazooClient, unique_group: str, tmp_path: Path, legacy_group: Dialect
) -> None:
    zk_client.create(GroupPaths(unique_group).mode, b"zookeeper", makepath=True)

    done, counts = counted(tmp_path, "get-mode", "-z", cluster.zookeeper, "-g", unique_group, "--json")

    assert done.code == EXIT_OK, done
    mode = json.loads(done.stdout)
    assert mode["dialect"] == legacy_group.value and mode["mode"] == "zookeeper" and mode["modified"], mode
    assert counts["writes"] == [], counts["writes"]
    assert counts["round_trips"] == ONE_PASS, counts
