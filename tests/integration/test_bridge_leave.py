"""A bridge leaving and joining a group in mode kafka, each bridge in its own process, as a deploy does it.

The pause of a clean leave: a bridge that stops under Kafka authority leaves the Kafka
group before it deletes its owner nodes, so the group's rebalance overlaps the release instead of following
it; nothing is processed twice and no partition has two owners meanwhile. And the hold that every Kafka
rebalance puts the other bridges in for a moment is routine: it is not logged as a WARNING.

The leaver's commit and leave go through its embedded member's poll thread, which confluent-kafka cannot wake
from a wait in poll: right after a served call, and once the connector is shutting down, that thread waits only
short slices, so the leave does not wait for a whole poll.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from migrator.demo.workload import bridge_props
from migrator.kafka.admin import KafkaAdmin
from migrator.kafka.member import EmbeddedMember
from migrator.observe import OwnersWatcher, judge, load_many
from migrator.protocol.partition import TopicPartition
from migrator.zk.paths import GroupPaths
from tests.apps.run import App, apps_fixture, start  # noqa: F401 - the `apps` fixture
from tests.helpers.bridge import owners, set_mode, wait_converged
from tests.helpers.kafka import KafkaCluster, make_topic
from tests.helpers.wait import wait_until
from tests.helpers.workload import SequencedProducer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PARTITIONS = 8


def start_bridge(apps: list[App], cluster: KafkaCluster, group: str, topic: str, cid: str, log: Path) -> App:
    """`tests.helpers.member_proc` as a bridge in its own process; its stderr shows the WARNINGs (it sets up
    no logging, as an app that does not configure it)."""
    props = [f"--property={k}={v}" for k, v in bridge_props(cluster.bootstrap_servers).items()]
    args = ["--zookeeper", cluster.zookeeper, "--group", group, "--topic", topic, "--streams", 2, "--consumer-id", cid]
    return start(apps, "-m", "tests.helpers.member_proc", *args, "--log", log, "--process-ms", 1, *props)


def stop(app: App) -> int:
    app.signal(signal.SIGTERM)
    return app.wait(60)


def test_a_bridge_leaves_the_kafka_group_before_it_releases_and_nobody_warns_of_a_hold(
    cluster, unique_group, unique_topic, zk_client, tmp_path: Path, apps: list[App]
) -> None:
    g, topic = unique_group, make_topic(cluster, unique_topic, PARTITIONS)
    logs = [tmp_path / f"{name}.jsonl" for name in ("a", "b", "c", "d")]
    admin = KafkaAdmin(cluster.bootstrap_servers)
    with OwnersWatcher(cluster.zookeeper, g) as watcher:
        producer = SequencedProducer(cluster, topic, rate=400).start()
        try:
            set_mode(zk_client, g, "kafka")
            a, b, c = (start_bridge(apps, cluster, g, topic, name, log) for name, log in zip("abc", logs, strict=False))
            cid = {app: f"{g}_{name}" for app, name in zip((a, b, c), "abc", strict=True)}
            wait_converged(zk_client, g, topic, PARTITIONS, "kafka", set(cid.values()))
            wait_until(lambda: len({r.member for r in load_many(logs)}) == 3, 60, what="all three processing")

            # When the leaver's first owner node goes, is its embedded member still in the Kafka group?
            leaver_parts = {str(p) for p, th in owners(zk_client, g, topic).items() if th.startswith(f"{cid[a]}-")}
            assert leaver_parts
            at_first_delete: list[frozenset[str]] = []

            def on_children(children: list[str]) -> bool:
                if not leaver_parts <= set(children) and not at_first_delete:
                    at_first_delete.append(admin.describe_group(g).client_ids)
                return not at_first_delete  # False ends the watch

            zk_client.ChildrenWatch(GroupPaths(g).owners_topic(topic), on_children)
            assert stop(a) == 0, a.stderr
            wait_until(lambda: bool(at_first_delete), 30, what="the leaver's owner nodes deleted")
            wait_converged(zk_client, g, topic, PARTITIONS, "kafka", {cid[b], cid[c]})

            d = start_bridge(apps, cluster, g, topic, "d", logs[3])  # and a join, for the hold's logging
            cid[d] = f"{g}_d"
            wait_converged(zk_client, g, topic, PARTITIONS, "kafka", {cid[b], cid[c], cid[d]})
            wait_until(lambda: any(r.member.startswith(cid[d]) for r in load_many(logs)), 60,
                       what="the new bridge processing")  # fmt: skip
        finally:
            produced = producer.stop()
        wait_until(lambda: produced <= {r.key for r in load_many(logs)}, 90, what="every record processed")
        for app in (b, c, d):
            assert stop(app) == 0, app.stderr
        ownership = watcher.intervals()
    verdict = judge(produced, load_many(logs), ownership)
    print(f"\nleave and join in mode kafka: {verdict.summary()}; at the leaver's first owner deletion the "
          f"Kafka group had {sorted(at_first_delete[0])}")  # fmt: skip
    assert verdict.ok, verdict.summary()
    for app, name in cid.items():
        assert "holding nothing" not in app.stderr, f"{name} warned of a routine hold:\n{app.stderr}"
        assert "-> zookeeper" not in app.stderr, f"{name} fell back:\n{app.stderr}"
    assert cid[a] not in at_first_delete[0], "the leaver deleted its owner nodes before leaving the Kafka group"


@contextmanager
def idle_member(cluster: KafkaCluster, group: str, topic: str) -> Iterator[EmbeddedMember]:
    """An embedded member alone in its group, once its poll thread waits whole polls; closed afterwards."""
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "client.id": "member"}
    member = EmbeddedMember(conf, 1000, lambda _event: None)
    member.start([topic])
    try:
        assert member.joined.wait(60), "the member joined no group"
        wait_until(lambda: member.full_waits > 0, 10, what="the poll thread waiting whole polls at idle")
        yield member
    finally:
        member.close()
    assert not member.alive


def test_a_leaving_member_serves_its_commit_and_leave_without_waiting_a_whole_poll(
    cluster, unique_group, unique_topic
) -> None:
    topic = make_topic(cluster, unique_topic, 2)
    with idle_member(cluster, unique_group, topic) as member:
        shorts = member.short_waits
        assert member.commit({TopicPartition(topic, 0): 1}, 30) == {TopicPartition(topic, 0)}
        wait_until(lambda: member.short_waits > shorts, 10, what="a short slice right after the served commit")

        member.expect_leave()  # what the worker does as the connector's shutdown begins
        full, shorts = member.full_waits, member.short_waits
        wait_until(lambda: member.short_waits >= shorts + 20, 30, what="the poll thread waiting in short slices")
        assert member.full_waits <= full + 1, "a whole poll began after the leave was announced"


def test_a_member_whose_streams_are_busy_serves_a_commit_without_waiting_a_whole_poll(
    cluster, unique_group, unique_topic
) -> None:
    """The application's `commit_offsets()` at SIGTERM comes before the shutdown announces the leave. Busy:
    the streams take batches faster than the short slices come."""
    with idle_member(cluster, unique_group, make_topic(cluster, unique_topic, 2)) as member:

        def slices_since(shorts: int, count: int) -> bool:
            for _ in range(100):  # what streams taking many batches do
                member.handing_out()
            return member.short_waits >= shorts + count

        shorts = member.short_waits
        wait_until(lambda: slices_since(shorts, 1), 30, what="the poll thread noticing the busy streams", interval=0.05)
        full, shorts = member.full_waits, member.short_waits
        wait_until(lambda: slices_since(shorts, 20), 30, what="the poll thread waiting in short slices", interval=0.05)
        assert member.full_waits <= full + 1, "a whole poll began while the streams were busy"

        full = member.full_waits
        wait_until(lambda: member.full_waits > full, 30, what="whole polls again once nothing is handed out")
