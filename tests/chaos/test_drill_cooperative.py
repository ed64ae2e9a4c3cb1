"""Cooperative groups (KIP-429): bridges whose embedded members use `cooperative-sticky`, beside plain
consumers that use it too, each in its own process, judged by the independent observer.

A cooperative rebalance revokes only what moves: a bridge releases just those partitions and claims just the
new ones, so the owner nodes of the partitions that stay with it are never deleted or re-created (their
ZooKeeper creation zxid does not change). The rolling replacement of the bridges by plain consumers and the
way back, the switch both ways, a broker restart mid-migration and a static member's restart all lose
nothing and process nothing twice. Static bridges ride out a broker restart (in an eager group too, for
comparison), and one whose group.instance.id another consumer takes says so and releases.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from migrator.observe.verdict import Overlap, OwnerViolation
from tests.helpers import cli
from tests.helpers.bridge import set_mode
from tests.helpers.wait import wait_until

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.timeout(300)]

COOPERATIVE = "cooperative-sticky"
BRIDGE = {"coordination.migration.partition.assignment.strategy": COOPERATIVE}
STATIC = {**BRIDGE, "migration.static.membership": "true"}
EAGER_STATIC = {"migration.static.membership": "true"}  # the eager default, range,roundrobin


def owner_nodes(drill: Drill) -> dict[int, tuple[str, int]]:
    """partition -> (owner thread, creation zxid of its owner node)."""
    out = {}
    for partition, thread in drill.owners().items():
        stat = drill.zk.exists(drill.paths.owner(drill.topic, partition))
        if stat is not None:
            out[partition] = (thread, stat.czxid)
    return out


def bridges_own(drill: Drill, *counts: int, quiet_s: float = 2.0) -> dict[int, tuple[str, int]]:
    """The bridges' owner nodes once one of `counts` partitions have one and nothing changed for `quiet_s`
    (cooperative-sticky balances to within one partition, but which member gets the larger share varies)."""

    def quiet() -> list[dict[int, tuple[str, int]]]:
        first = owner_nodes(drill)
        if len(first) not in counts:
            return []
        time.sleep(quiet_s)
        return [first] if owner_nodes(drill) == first else []

    return wait_until(quiet, 60, interval=0.2, what=f"the bridges to own {counts} partitions, quietly")[0]


def plain_consumers_own_no_nodes(violation: OwnerViolation) -> bool:
    """Plain Kafka consumers process without owner nodes, by design: the observer's overlap check (two
    processors of one partition at once) is what judges them beside the bridges."""
    return violation.record.member.startswith(("p0@", "p1@", "dup@"))


def kept_their_nodes(before: dict[int, tuple[str, int]], after: dict[int, tuple[str, int]]) -> None:
    """Every partition a bridge still owns kept the owner node it had: not released, not claimed again."""
    stayed = {p: node for p, node in after.items() if p in before and before[p][0] == node[0]}
    assert stayed, f"no partition stayed with its bridge: {before} -> {after}"
    assert all(before[p] == node for p, node in stayed.items()), f"owner nodes re-created: {before} -> {after}"


def test_bridges_hand_over_to_cooperative_confluent_consumers_and_take_back(drill: Drill) -> None:
    """The switch to Kafka; plain consumers join beside the bridges; b1, a static member, restarts; the bridges
    are replaced; a bridge comes back beside them, they leave, and the switch back to ZooKeeper."""
    drill.start()
    names = ["b0", "b1"]
    drill.spawn_bridge("b0", streams=1, **BRIDGE)
    drill.spawn_bridge("b1", streams=1, **STATIC)
    drill.settle("zookeeper", names)
    set_mode(drill.zk, drill.group, "kafka")
    drill.settle("kafka", names)
    before = owner_nodes(drill)

    drill.plain("p0", COOPERATIVE)  # takes a share; the bridges keep the rest untouched
    after = bridges_own(drill, drill.partitions - drill.partitions // 3)
    kept_their_nodes(before, after)
    drill.plain("p1", COOPERATIVE)
    before = bridges_own(drill, drill.partitions // 2)
    kept_their_nodes(after, before)
    drill.leave("b1")  # a static member's restart: its partitions wait for it, nobody else's move
    drill.spawn_bridge("b1", streams=1, **STATIC)
    after = bridges_own(drill, drill.partitions // 2)
    b0 = f"{drill.cid('b0')}-"
    assert {p: n for p, n in after.items() if n[0].startswith(b0)} == {
        p: n for p, n in before.items() if n[0].startswith(b0)
    }, "b0's partitions moved while the static member restarted"
    assert {p for p, n in after.items() if not n[0].startswith(b0)} == {
        p for p, n in before.items() if not n[0].startswith(b0)
    }, "the static member came back to other partitions"
    for name in names:  # the rolling replacement
        drill.leave(name)
    bridges_own(drill, 0)

    drill.spawn_bridge("b2", streams=1, **BRIDGE)  # the way back
    back = bridges_own(drill, drill.partitions // 3, drill.partitions // 3 + 1)
    drill.leave("p0")
    kept_their_nodes(back, bridges_own(drill, drill.partitions // 2))
    drill.leave("p1")
    drill.settle("kafka", ["b2"])
    set_mode(drill.zk, drill.group, "zookeeper")  # the switch back
    drill.settle("zookeeper", ["b2"])
    verdict = drill.finish(excuse_violation=plain_consumers_own_no_nodes)
    assert not verdict.duplicates, verdict.summary()


def static_bridges_under_kafka(drill: Drill, props: dict[str, str] = STATIC) -> None:
    """Start the drill with static bridges b0 and b1 (with `props`) settled under Kafka authority."""
    drill.start()
    names = ["b0", "b1"]
    for name in names:
        drill.spawn_bridge(name, streams=1, **props)
    set_mode(drill.zk, drill.group, "kafka")
    drill.settle("kafka", names)


@pytest.mark.parametrize(
    ("props", "peer"), [(STATIC, COOPERATIVE), (EAGER_STATIC, "range")], ids=["cooperative", "eager"]
)
def test_a_static_group_rides_out_a_broker_restart(
    drill_on: Callable[..., Drill], props: dict[str, str], peer: str
) -> None:
    """Static bridges (group.instance.id) beside a plain consumer of the same protocol: a broker restart
    mid-migration, then a static bridge's restart, which takes its partitions back while the others keep theirs."""
    drill = drill_on(brokers=1)
    static_bridges_under_kafka(drill, props)
    drill.plain("p0", peer)
    bridges_own(drill, drill.partitions - drill.partitions // 3)
    drill.outage("broker-1", 5.0)
    drill.resumes(timeout=60)
    before = bridges_own(drill, drill.partitions - drill.partitions // 3)
    restarted_ns = time.time_ns()
    drill.leave("b1")  # a static member's restart, the broker's restart behind it: a clean step
    drill.spawn_bridge("b1", streams=1, **props)
    after = bridges_own(drill, drill.partitions - drill.partitions // 3)
    assert {p: n[0] for p, n in after.items()} == {p: n[0] for p, n in before.items()}, (
        f"partitions moved while the static member restarted: {before} -> {after}"
    )
    b0 = f"{drill.cid('b0')}-"
    assert {p: n for p, n in after.items() if n[0].startswith(b0)} == {
        p: n for p, n in before.items() if n[0].startswith(b0)
    }, "b0 released partitions while the static member restarted"
    drill.resumes(timeout=60)
    verdict = drill.finish(allow_duplicate=lambda d: d.by[-1].start_ns < restarted_ns,
                           excuse_violation=plain_consumers_own_no_nodes)  # fmt: skip
    print(f"duplicates after the broker restart: {len(verdict.duplicates)}")


def test_a_duplicated_instance_id_fences_the_bridge_which_says_so_and_releases(drill: Drill) -> None:
    """A consumer started by mistake with a static bridge's group.instance.id (its consumer.id) fences the bridge
    out of the Kafka group: the bridge stays up, says once which instance id is duplicated, and releases every
    partition it owned, which the other instance now has. Nothing can keep the two instances from processing
    those partitions side by side for a moment, so only there overlaps and duplicates are excused; nothing is
    lost."""
    static_bridges_under_kafka(drill)
    b1, instance = drill.procs["b1"], "b1"  # a static bridge's group.instance.id is its consumer.id
    drill.plain("dup", COOPERATIVE, instance_id=instance)

    def fenced_lines() -> list[str]:
        lines = b1.stderr_path.read_text(errors="replace").splitlines()
        return [line for line in lines if " ERROR the embedded member was fenced" in line and repr(instance) in line]

    wait_until(fenced_lines, 60, what="b1's error line naming its group.instance.id")
    wait_until(lambda: not drill.owned_by("b1"), 60, what="b1 to release its partitions")
    drill.assert_alive()
    drill.resumes(timeout=60)
    assert len(fenced_lines()) == 1, fenced_lines()

    def between_the_two_instances(overlap: Overlap) -> bool:
        return {overlap.first.member.split("@")[0], overlap.second.member.split("@")[0]} == {drill.cid("b1"), "dup"}

    verdict = drill.finish(allow_duplicate=lambda _d: True, excuse_violation=plain_consumers_own_no_nodes,
                           excuse_overlap=between_the_two_instances)  # fmt: skip
    print(f"{drill.group}: {len(verdict.duplicates)} duplicates between the two instances")


def status(drill: Drill) -> dict[str, Any]:
    """`migrator status --json` as an operator runs it."""
    done = cli.run("status", "-g", drill.group, "-z", drill.cluster.zookeeper, "-b", drill.cluster.bootstrap_servers,
                   "--json")  # fmt: skip
    return dict(json.loads(done.stdout))


def in_kafka_group(drill: Drill, name: str) -> None:
    """Wait for `status` to show bridge `name` in the Kafka group."""
    cid = drill.cid(name)
    wait_until(lambda: any(b["consumer_id"] == cid and b["in_kafka_group"] for b in status(drill)["bridges"]), 60,
               interval=0.5, what=f"{name} in the Kafka group")  # fmt: skip


def test_a_bridge_whose_protocol_the_group_does_not_share_says_so(drill: Drill) -> None:
    """A bridge switched to cooperative-sticky alone while another still runs the eager default (the runbook's
    two-step bounce skipped): the broker refuses the later one. It says why at start-up, `status` names the
    disagreement as an error and `set-mode kafka` is refused with it; both keep processing under ZooKeeper.
    Once the eager one is restarted on cooperative-sticky too, both join and the switch goes through."""
    drill.start()
    drill.spawn_bridge("b0", streams=1)  # range,roundrobin: eager
    in_kafka_group(drill, "b0")
    b1 = drill.spawn_bridge("b1", streams=1, **BRIDGE)
    zk, kafka = ("-z", drill.cluster.zookeeper), ("-b", drill.cluster.bootstrap_servers)

    def refused_at_start() -> bool:
        return "disagree with this bridge on the rebalance protocol" in b1.stderr_path.read_text(errors="replace")

    wait_until(refused_at_start, 60, what="b1's error line")
    drill.settle("zookeeper", ["b0", "b1"])
    report = status(drill)
    kinds = {f["kind"]: f for f in report["findings"]}
    assert "protocol-disagreement" in kinds and drill.cid("b1") in kinds["protocol-disagreement"]["message"], report
    assert report["verdict"] == "ERR", report
    refused = cli.run("set-mode", "kafka", "-g", drill.group, "--reason", "test", *zk, *kafka).single_error(2)
    assert "members disagree on the rebalance protocol" in refused and drill.cid("b1") in refused, refused

    drill.leave("b0")  # the runbook's bounce to cooperative under ZooKeeper authority, finished
    drill.spawn_bridge("b0", streams=1, **BRIDGE)
    for name in ("b0", "b1"):  # the refused one joins by itself at its next attempt
        in_kafka_group(drill, name)
    switched = cli.run("set-mode", "kafka", "-g", drill.group, "--reason", "test", "--wait", *zk, *kafka)
    assert switched.code == 0, switched.stderr
    drill.settle("kafka", ["b0", "b1"])
    verdict = drill.finish()
    assert not verdict.duplicates, verdict.summary()
