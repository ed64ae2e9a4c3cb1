"""`migrator fleet-scan` as an operator runs it: the command in its own process, on a small synthetic fleet in a
chroot of the real ZooKeeper (no broker registered there, so the scan consults no Kafka)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from migrator.fleet import synthetic
from tests.helpers import cli
from tests.helpers.kafka import admin
from tests.helpers.wait import wait_until
from tests.helpers.zk import zk_client as open_zk

pytestmark = pytest.mark.timeout(600)

OWN_LINES = re.compile(r"^(\d+ groups in \d+ ensemble\(s\)|(rows|readiness) written to .+|spark log: .+)$")
"""Every line the scan itself writes on stderr in a run without trouble."""


@pytest.fixture
def small_fleet(cluster: Any, zk_client: Any) -> Iterator[str]:
    """Six synthetic groups in a chroot of their own; yields the ensemble (connect string with the chroot)."""
    prefix = f"quiet{int(time.time() * 1000)}"
    chroot = f"/fleet-cli-{prefix}"
    zk_client.ensure_path(chroot)
    ensemble = f"{cluster.zookeeper}{chroot}"
    with open_zk(ensemble, timeout=30) as writer:
        try:
            synthetic.make_fleet(writer, 6, prefix=prefix, seed=3, now_ms=int(time.time() * 1000))
            yield ensemble
        finally:
            synthetic.remove_fleet(writer, prefix)
            zk_client.delete(chroot, recursive=True)


def scan(ensemble: str, *args: str) -> cli.CliRun:
    return cli.run("fleet-scan", "-z", ensemble, "--spark-master", "local[2]", "--stable-for", "0s", *args,
                   timeout=300)  # fmt: skip


def test_the_scan_writes_only_its_own_lines_on_stderr_and_spark_s_to_its_log(small_fleet: str, tmp_path: Path):
    quiet = scan(small_fleet, "--output", str(tmp_path), "--format", "csv")
    assert quiet.code == 0, quiet.stderr
    assert [line for line in quiet.stderr.splitlines() if not OWN_LINES.match(line)] == [], quiet.stderr
    assert "spark log:" not in quiet.stderr
    verbose = scan(small_fleet, "--output", str(tmp_path), "--format", "csv", "--verbose")
    assert verbose.code == 0, verbose.stderr
    logs = [line.split(": ", 1)[1] for line in verbose.stderr.splitlines() if line.startswith("spark log: ")]
    assert len(logs) == 1, verbose.stderr
    assert "NativeCodeLoader" in Path(logs[0]).read_text()  # the JVM's and Spark's own lines went there
    Path(logs[0]).unlink()  # kept for the operator; the test's own is not needed any more


def test_a_spark_that_fails_leaves_one_error_line_naming_its_log(small_fleet: str, tmp_path: Path):
    failed = cli.run("fleet-scan", "-z", small_fleet, "--spark-master", "local[2]", "--stable-for", "0s",
                     env={"JAVA_HOME": str(tmp_path / "no-java")}, timeout=300)  # fmt: skip
    line = failed.single_error(1)
    assert [x for x in failed.stderr.splitlines() if x != line and not OWN_LINES.match(x)] == [], failed.stderr
    log = Path(line.rsplit("Spark's log: ", 1)[1])
    assert "no-java" in log.read_text()  # what the JVM's launcher said is kept
    log.unlink()


def test_readiness_lists_each_blocker_with_its_command_then_says_ready_once_the_groups_are_gone(
    cluster: Any, zk_client: Any, tmp_path: Path
):
    prefix = f"retire{int(time.time() * 1000)}"
    chroot = f"/fleet-cli-{prefix}"
    zk_client.ensure_path(f"{chroot}/consumers")
    ensemble = f"{cluster.zookeeper}{chroot}"
    try:
        with open_zk(ensemble, timeout=30) as writer:
            fleet = synthetic.make_fleet(writer, 6, prefix=prefix, seed=3, now_ms=int(time.time() * 1000))
            before = scan(ensemble, "--readiness", "--no-progress")
            assert before.code == 1, before.stderr
            assert "NOT YET" in before.stdout and "READY TO RETIRE" not in before.stdout
            legacy = sorted(g for g, s in fleet.shapes.items() if s.shape == "legacy")
            if legacy:
                assert f"migrator cutover -z {ensemble} -g" in before.stdout
            # the writer's session holds the members' ephemeral nodes: `dump` shows them under this chroot
            assert f"ephemeral nodes in {prefix}-000000" in before.stdout
            as_json = scan(ensemble, "--readiness", "--format", "json", "--no-progress")
            doc = json.loads(as_json.stdout)
            assert as_json.code == 1 and doc["ready"] is False
            verdict = doc["ensembles"][0]
            assert sum(verdict["groups"].values()) == 6
            assert verdict["consumers_sessions"] and verdict["other_clients"] is not None
            assert {b["kind"] for b in verdict["blockers"]} >= {"stop-sessions"}
            synthetic.remove_fleet(writer, prefix)
        after = scan(ensemble, "--readiness", "--no-progress", "--output", str(tmp_path))
        assert after.code == 0, after.stdout + after.stderr
        assert "READY TO RETIRE: no consumer group depends on this ensemble" in after.stdout
        written = json.loads((tmp_path / "fleet-readiness.json").read_text())
        assert written["ready"] is True and written["ensembles"][0]["blockers"] == []
    finally:
        zk_client.delete(chroot, recursive=True)


def test_a_group_unused_for_longer_than_abandoned_after_is_abandoned_and_a_recent_one_is_not(
    cluster: Any, zk_client: Any, tmp_path: Path
):
    """Two groups with offsets and nobody registered, in ZooKeeper and in Kafka: the one whose offsets were last
    written before --abandoned-after is ABANDONED, the other stays ORPHANED (the scan finds the brokers itself)."""
    from migrator.zk.paths import GroupPaths

    prefix = f"aband{int(time.time() * 1000)}"
    old, recent = f"{prefix}-old", f"{prefix}-recent"
    try:
        zk_client.create(GroupPaths(old).offset("t", 0), b"5", makepath=True)
        zk_client.create(f"{GroupPaths(old).root}/ids", makepath=True)
        wait_until(lambda: _coordinator_answers(cluster, old), 60, what="Kafka's group coordinator answers")
        time.sleep(4)
        zk_client.create(GroupPaths(recent).offset("t", 0), b"5", makepath=True)
        zk_client.create(f"{GroupPaths(recent).root}/ids", makepath=True)
        done = scan(cluster.zookeeper, "--include", f"^{prefix}-", "--abandoned-after", "3s", "--output", str(tmp_path),
                    "--format", "json", "--no-progress")  # fmt: skip
        assert done.code == 0, done.stderr
        rows = {r["group"]: r for r in map(json.loads, (tmp_path / "fleet-scan.jsonl").read_text().splitlines())}
        assert rows[old]["status"] == "ABANDONED", (rows[old]["reasons"], rows[old]["kafka_state"])
        assert rows[recent]["status"] == "ORPHANED", rows[recent]
        assert f"migrator cleanup -z {cluster.zookeeper} -g {old} --abandoned --execute" in done.stdout
    finally:
        for group in (old, recent):
            zk_client.delete(GroupPaths(group).root, recursive=True)


def _coordinator_answers(cluster: Any, group: str) -> bool:
    """A fresh cluster's group coordinator answers DescribeGroups only once it has loaded its partition."""
    try:
        admin(cluster).describe_consumer_groups([group], request_timeout=5)[group].result(timeout=10)
    except Exception:  # any failure means "not yet"
        return False
    return True


def test_a_group_cut_over_waits_for_its_kafka_consumers_and_a_legacy_group_shows_its_route(
    cluster: Any, zk_client: Any, tmp_path: Path
):
    """`migrator cutover` on a group whose legacy members have stopped; the scan shows it CUT_OVER with
    kafka-consumers-missing, then kafka-consumers-started once a plain Kafka consumer runs. A group with a
    legacy member registered is LEGACY, route `cutover`."""
    from migrator.protocol.codecs import Registration
    from migrator.zk.paths import GroupPaths
    from tests.helpers.kafka import make_topic, produce
    from tests.helpers.pykafka_peer import ConfluentMember

    prefix = f"cut{int(time.time() * 1000)}"
    cut, legacy, topic = f"{prefix}-cut", f"{prefix}-legacy", f"{prefix}-t"
    make_topic(cluster, topic, partitions=2)
    produce(cluster, topic, [f"r{i}" for i in range(10)])
    wait_until(lambda: _coordinator_answers(cluster, cut), 60, what="Kafka's group coordinator answers")
    zk_client.create(GroupPaths(cut).offset(topic, 0), b"3", makepath=True)
    zk_client.create(GroupPaths(cut).ids, makepath=True)
    member = Registration({topic: 1}, timestamp_ms=int(time.time() * 1000)).encode()
    zk_client.create(f"{GroupPaths(legacy).ids}/{legacy}_h-1-a", member, ephemeral=True, makepath=True)
    consumer = None
    try:
        done = cli.run("cutover", "-g", cut, "-z", cluster.zookeeper, "-b", cluster.bootstrap_servers,
                       "--zk-auth", "digest:ops:s3cret", timeout=120)  # fmt: skip
        assert done.code == 0, done.stdout + done.stderr

        def rows(*extra: str) -> dict[str, dict[str, Any]]:
            ran = scan(cluster.zookeeper, "--include", f"^{prefix}-", "--format", "json", "--no-progress",
                       "--plan-file", str(tmp_path / "plan.json"), *extra)  # fmt: skip
            assert ran.code == 0, ran.stderr
            return {r["group"]: r for r in map(json.loads, ran.stdout.splitlines())}

        before = rows()
        assert (before[cut]["status"], before[cut]["reasons"][0].split(":")[0]) == (
            "CUT_OVER",
            "kafka-consumers-missing",
        )
        assert (before[legacy]["status"], before[legacy]["route"]) == ("LEGACY", "cutover")
        consumer = ConfluentMember(cluster.bootstrap_servers, cut, topic, "kc1", tmp_path / "kc1.jsonl")
        after = rows()
        assert after[cut]["status"] == "CUT_OVER" and after[cut]["reasons"][0].startswith("kafka-consumers-started")
    finally:
        if consumer is not None:
            consumer.stop()
        for group in (cut, legacy):
            zk_client.delete(GroupPaths(group).root, recursive=True)


@pytest.mark.slow
def test_a_fleet_is_cleaned_in_waves_and_rolled_back_from_its_plan_and_the_verdict_follows(
    cluster: Any, zk_client: Any, tmp_path: Path
):
    """300 synthetic groups in mixed states, 60 more abandoned (orphaned, offsets older than --abandoned-after):
    the verdict before, the abandoned ones cleaned in waves on Spark local[2] (timed beside a plain scan of the same
    fleet), the verdict after, and every tree back, node by node, after --rollback."""
    from migrator.zk.archive import read_tree

    prefix = f"waves{int(time.time() * 1000)}"
    chroot = f"/fleet-cli-{prefix}"
    zk_client.ensure_path(f"{chroot}/consumers")
    ensemble = f"{cluster.zookeeper}{chroot}"
    kafka = ("-b", cluster.bootstrap_servers, "--abandoned-after", "2s", "--no-progress")
    wait_until(lambda: _coordinator_answers(cluster, prefix), 60, what="Kafka's group coordinator answers")
    try:
        with open_zk(ensemble, timeout=30) as writer:
            now = int(time.time() * 1000)
            mixed = synthetic.make_fleet(writer, 300, prefix=f"{prefix}-m", seed=5, now_ms=now)
            synthetic.make_fleet(writer, 60, prefix=f"{prefix}-a", seed=6, now_ms=now, only="orphaned")
            time.sleep(3)
            orphaned = sorted(g for g, s in mixed.shapes.items() if s.shape == "orphaned")
            abandoned = sorted([*orphaned, *(synthetic.group_name(f"{prefix}-a", i) for i in range(60))])
            trees = {g: read_tree(writer, g) for g in abandoned}

            before = _verdict(ensemble, *kafka)
            assert before["ready"] is False and before["ensembles"][0]["groups"]["abandoned"] == len(abandoned)

            started = time.monotonic()
            plain = scan(ensemble, *kafka, "--plan-file", str(tmp_path / "plan.json"))
            plain_s = time.monotonic() - started
            assert plain.code == 0, plain.stderr
            plan = tmp_path / "cleanup-plan.json"
            started = time.monotonic()
            cleaned = scan(ensemble, *kafka, "--cleanup", "--abandoned", "--execute", "--wave-size", "20",
                           "--archive-dir", str(tmp_path / "archives"), "--plan-file", str(plan))  # fmt: skip
            clean_s = time.monotonic() - started
            assert cleaned.code == 0, cleaned.stdout + cleaned.stderr
            print(
                f"\nplain scan of 360 groups {plain_s:.1f}s; scan + cleanup of {len(abandoned)} in waves {clean_s:.1f}s"
            )
            assert f"wave {-(-len(abandoned) // 20)}: cleaned" in cleaned.stdout
            assert not any(writer.exists(f"/consumers/{g}") for g in abandoned)
            assert len(list((tmp_path / "archives").iterdir())) == len(abandoned)

            after = _verdict(ensemble, *kafka, "--archive-dir", str(tmp_path / "archives"))
            assert after["ensembles"][0]["groups"]["abandoned"] == 0
            assert after["ensembles"][0]["groups"]["cleaned"] == len(abandoned)

            back = cli.run("fleet-scan", "-z", ensemble, "--rollback", str(plan), timeout=300)
            assert back.code == 0, back.stdout + back.stderr
            for group, tree in trees.items():
                restored = read_tree(writer, group)
                assert [(n.path, n.data, n.acls) for n in restored.nodes] == [
                    (n.path, n.data, n.acls) for n in tree.nodes
                ]
            synthetic.remove_fleet(writer, f"{prefix}-m")
            synthetic.remove_fleet(writer, f"{prefix}-a")
    finally:
        zk_client.delete(chroot, recursive=True)


def _verdict(ensemble: str, *args: str) -> dict[str, Any]:
    ran = scan(ensemble, *args, "--readiness", "--format", "json")
    assert ran.code in (0, 1) and ran.stdout, ran.stderr
    return json.loads(ran.stdout)


def test_groups_listed_in_a_file_are_cut_over_in_waves_a_bridge_group_stops_the_run_and_rollback_undoes_it(
    cluster: Any, zk_client: Any, tmp_path: Path
):
    """Two stopped legacy groups cut over in wave 1 (fenced, mode kafka); a group of bridges in wave 2 is
    refused (its way is set-mode) and stops the run; --rollback of the plan lifts the fences and records
    zookeeper again."""
    from migrator.protocol.codecs import Registration
    from migrator.zk.paths import GroupPaths
    from tests.helpers.kafka import make_topic

    prefix = f"cutw{int(time.time() * 1000)}"
    legacy, bridged, topic = [f"{prefix}-a", f"{prefix}-b"], f"{prefix}-z", f"{prefix}-t"
    make_topic(cluster, topic, partitions=1)
    wait_until(lambda: _coordinator_answers(cluster, prefix), 60, what="Kafka's group coordinator answers")
    for group in legacy:
        zk_client.create(GroupPaths(group).offset(topic, 0), b"0", makepath=True)
        zk_client.create(GroupPaths(group).ids, makepath=True)
    member = Registration({topic: 1}, timestamp_ms=int(time.time() * 1000)).encode()
    zk_client.create(GroupPaths(bridged).member(f"{bridged}_h-1-a"), member, ephemeral=True, makepath=True)
    zk_client.create(GroupPaths(bridged).migration_member(f"{bridged}_h-1-a"), member, ephemeral=True, makepath=True)
    groups_file, plan = tmp_path / "groups.txt", tmp_path / "cutover-plan.json"
    groups_file.write_text("\n".join([*legacy, bridged]) + "\n")
    base = ("fleet-scan", "-z", cluster.zookeeper, "-b", cluster.bootstrap_servers, "--zk-auth", "digest:ops:s3cret")
    try:
        ran = cli.run(*base, "--cutover", str(groups_file), "--execute", "--wave-size", "2", "--wave-interval", "30s",
                      "--plan-file", str(plan), timeout=300)  # fmt: skip
        assert ran.code == 1, ran.stdout + ran.stderr
        assert f"wave 1: cut over 2 of 2: {cluster.zookeeper}/{legacy[0]}" in ran.stdout
        assert f"{bridged}: refused" in ran.stderr
        for group in legacy:
            assert not _world_may_create(zk_client, GroupPaths(group).ids)
            assert zk_client.get(GroupPaths(group).mode)[0] == b"kafka"
        back = cli.run(*base, "--rollback", str(plan), timeout=300)
        assert back.code == 0, back.stdout + back.stderr
        for group in legacy:
            assert _world_may_create(zk_client, GroupPaths(group).ids)
            assert zk_client.get(GroupPaths(group).mode)[0] == b"zookeeper"
    finally:
        for group in [*legacy, bridged]:
            zk_client.delete(GroupPaths(group).root, recursive=True)


def _world_may_create(zk: Any, path: str) -> bool:
    """Read here with kazoo, not with the product's reader: whether an anonymous member may register."""
    acls, _ = zk.get_acls(path)
    return any(a.id.scheme == "world" and a.perms & 4 for a in acls)  # 4: ZooKeeper's CREATE bit
