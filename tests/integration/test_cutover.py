"""`migrator cutover` with the real peers, the CLI as an operator runs it, the observer as the judge.

A Scala 1.1.1 group under load is fenced (a stale Scala member started then fails to register and consumes
nothing), the command is stopped by its --timeout and by Ctrl-C while waiting and run again, the old
members leave, Java 3.9 and confluent-kafka consumers take over, and the group is rolled back to Scala
consumers. A pykafka 2.8.0 group goes to confluent-kafka consumers the same way, and back. Each refusal leaves
ZooKeeper and Kafka as they were. The observer finds nothing lost, nothing processed twice or by two
members at once; the downtime each cutover causes is printed beside a plain consumer's join time.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.security import Permissions

from migrator.kafka.admin import KafkaAdmin
from migrator.observe import Processed, duplicates, load_many, lost, overlaps
from migrator.protocol.partition import TopicPartition
from migrator.zk.paths import GroupPaths
from tests.helpers import cli
from tests.helpers.kafka import make_topic, produce
from tests.helpers.peers import ROOT, JvmPeers, Peers
from tests.helpers.pykafka_peer import ConfluentMember, PykafkaMember
from tests.helpers.wait import wait_until
from tests.helpers.workload import SequencedProducer
from tests.integration.test_cli_conventions import _drain

pytestmark = pytest.mark.interop

PARTITIONS = 4
ADMIN = "digest:ops:s3cret"


class Walk:
    """One group's members (each logging to its own file), the CLI on its cluster, and the judge."""

    def __init__(self, cluster: Any, zk: KazooClient, peers: Peers, group: str, topic: str, tmp: Path) -> None:
        self.cluster, self.zk, self.peers, self.group, self.topic, self.tmp = cluster, zk, peers, group, topic, tmp
        self.others: dict[str, Any] = {}
        self.started_at: dict[str, int] = {}

    def args(self, *extra: str, auth: bool = True) -> list[str]:
        base = ["cutover", "-g", self.group, "-z", self.cluster.zookeeper, "-b", self.cluster.bootstrap_servers]
        return [*base, *(["--zk-auth", ADMIN] if auth else []), *extra]

    def cutover(self, *extra: str, auth: bool = True, timeout: float = 120) -> cli.CliRun:
        return cli.run(*self.args(*extra, auth=auth), timeout=timeout)

    def log(self, name: str) -> Path:
        return self.tmp / f"{name}.jsonl"

    def note_start(self, name: str) -> None:
        self.started_at[name] = time.time_ns()

    def confluent(self, name: str) -> ConfluentMember:
        self.note_start(name)
        member = ConfluentMember(self.cluster.bootstrap_servers, self.group, self.topic, name, self.log(name))
        self.others[name] = member
        return member

    def pykafka(self, name: str) -> PykafkaMember:
        member = PykafkaMember(self.cluster.zookeeper, self.cluster.bootstrap_servers, self.group, self.topic,
                               self.log(name))  # fmt: skip
        self.others[name] = member
        return member

    def stop(self, name: str) -> None:
        if name in self.others:
            assert self.others[name].stop() == 0, self.others[name].death()
        else:
            self.peers.started[name].stop()

    def records(self) -> list[Processed]:
        paths = [self.log(n) for n in [*self.others, *self.peers.started] if self.log(n).exists()]
        return load_many(paths)

    def processed(self, produced: Iterable[tuple[str, int, int]], what: str, timeout: float = 90) -> None:
        wanted = list(produced)
        wait_until(lambda: not lost(wanted, self.records()), timeout, interval=0.5, what=what)

    def fenced(self) -> bool:
        acls, _ = self.zk.get_acls(GroupPaths(self.group).ids)
        return not any(a.id.scheme == "world" and a.perms & Permissions.CREATE for a in acls)

    def untouched(self) -> None:
        """What a refused cutover could have written is not there: the fence, the mode, its audit trail."""
        paths = GroupPaths(self.group)
        assert not self.fenced() and self.zk.exists(paths.mode) is None, "a refusal wrote"
        assert self.zk.exists(paths.audit) is None, "a refusal wrote"

    def close(self) -> None:
        for member in self.others.values():
            if member.alive():
                member.kill()
        self.peers.close()


@pytest.fixture
def walk(cluster: Any, zk_client: KazooClient, jvm_peers: JvmPeers, unique_group: str, unique_topic: str,
         tmp_path: Path) -> Iterator[Walk]:  # fmt: skip
    make_topic(cluster, unique_topic, partitions=PARTITIONS)
    peers = Peers(cluster, jvm_peers, unique_group, unique_topic, tmp_path)
    w = Walk(cluster, zk_client, peers, unique_group, unique_topic, tmp_path)
    yield w
    w.close()


def judged(w: Walk, produced: set[tuple[str, int, int]]) -> list[Processed]:
    """The observer's verdict: every record processed, none twice, none by two members at once."""
    w.processed(produced, "every produced record processed")
    records = w.records()
    assert not lost(produced, records)
    assert not duplicates(records), duplicates(records)[:3]
    assert not overlaps(records), overlaps(records)[:3]
    return records


def handover_s(w: Walk, old: set[str], new: set[str]) -> float:
    """Downtime as a user sees it: the last record processed by `old` members to the first by `new` ones."""
    last_old = max(r.end_ns for r in load_many([w.log(n) for n in old]))
    first_new = min(r.start_ns for r in load_many([w.log(n) for n in new]))
    return (first_new - last_old) / 1e9


def join_s(w: Walk, name: str) -> float:
    """A plain consumer's join time: its process started to its first record processed."""
    return (min(r.start_ns for r in load_many([w.log(name)])) - w.started_at[name]) / 1e9


def migrators_part(done: dict[str, dict[str, Any]]) -> float:
    """Fence to offsets carried (and mode recorded) without the wait for the operator to stop the members
    (which sees them gone within one poll, `POLL_INTERVAL_S`): the writing steps' own time."""
    return sum(s["seconds"] for name, s in done.items() if name != "wait-empty")


def steps(run: cli.CliRun) -> dict[str, dict[str, Any]]:
    assert run.code == 0, run
    return {s["step"]: s for s in json.loads(run.stdout)["steps"]}


def test_a_scala_group_cuts_over_to_kafka_consumers_and_back(walk: Walk) -> None:
    w = walk
    producer = SequencedProducer(w.cluster, w.topic, rate=40).start()
    w.peers.scala("s0")
    w.peers.scala("s1")
    wait_until(lambda: len(w.records()) > 20, 60, what="the Scala members process")
    refused = w.cutover(auth=False)
    assert "--zk-auth" in refused.single_error(2)
    w.untouched()
    # the fence goes up; the wait expires with the members still running; the fence stays
    expired = w.cutover("--timeout", "2")
    assert "did not empty" in expired.single_error(1) and w.fenced()
    with pytest.raises(AssertionError, match="stale exited"):
        w.peers.scala("stale")
    assert "NoAuth" in (w.tmp / "stale.stderr").read_text()
    # Ctrl-C while waiting, then the run that finishes while the old deployment stops
    waiting = cli.start(*w.args("--timeout", "60"))
    time.sleep(3)
    interrupted = cli.interrupt(waiting)
    assert "run `migrator cutover" in interrupted.single_error(130)
    finishing = cli.start(*w.args("--timeout", "90", "--json"))
    w.stop("s0")
    w.stop("s1")
    out, err = finishing.communicate(timeout=120)
    forward = steps(cli.CliRun(finishing.returncode, out, err))
    assert "fence" not in forward and {"carry-offsets", "record-mode"} <= set(forward)
    # the Kafka consumers take over where the Scala ones stopped
    w.confluent("c0")
    w.note_start("p0")
    w.peers.plain("p0")
    again = w.cutover("--json")
    assert steps(again) == {} and json.loads(again.stdout)["state"] == "cut-over"
    time.sleep(3)
    # rollback: the Kafka consumers leave, the offsets come back, the fence is lifted, Scala members return
    live = w.cutover("--rollback")
    assert "live member" in live.single_error(2)
    w.stop("p0")
    w.stop("c0")
    rollback = w.cutover("--rollback", "--json")
    assert set(steps(rollback)) == {"carry-offsets-back", "record-mode-back", "lift-fence"}
    w.peers.scala("s2")
    time.sleep(3)
    judged(w, producer.stop())
    assert not load_many([w.log("stale")]), "the stale member consumed"
    old, new = {"s0", "s1"}, {"p0", "c0"}
    print(
        f"scala cutover: handover {handover_s(w, old, new):.2f}s (last Scala record to first Kafka one); "
        f"migrator's part {migrators_part(forward):.2f}s; join c0 {join_s(w, 'c0'):.2f}s, p0 {join_s(w, 'p0'):.2f}s;"
        f" rollback handover {handover_s(w, new, {'s2'}):.2f}s"
    )


def test_a_pykafka_group_cuts_over_to_confluent_consumers_and_back(walk: Walk) -> None:
    w = walk
    producer = SequencedProducer(w.cluster, w.topic, rate=40).start()
    w.pykafka("k0")
    w.pykafka("k1")
    wait_until(lambda: len(w.records()) > 20, 60, what="the pykafka members process")
    admin = KafkaAdmin(w.cluster.bootstrap_servers)
    running = cli.start(*w.args("--timeout", "90", "--json"))
    wait_until(w.fenced, 30, what="the fence")
    stale = w.pykafka("stale")  # pykafka says `ready` before it registers, then fails to
    wait_until(lambda: not stale.alive(), 30, what="the stale pykafka member to fail")
    assert stale.returncode != 0 and "NoAuth" in stale.stderr_path.read_text()
    time.sleep(2)
    w.stop("k0")
    w.stop("k1")
    committed = admin.group_offsets(w.group)
    out, err = running.communicate(timeout=120)
    forward = steps(cli.CliRun(running.returncode, out, err))
    assert "carry-offsets" not in forward and admin.group_offsets(w.group) == committed
    assert json.loads(out)["dialect"] == "pykafka"
    resume = {TopicPartition(e["topic"], e["partition"]): e["offset"] for e in json.loads(out)["resume_at"]}
    assert resume == committed
    w.confluent("c0")
    w.confluent("c1")
    time.sleep(3)
    # back to pykafka members, which read Kafka's offsets: nothing is carried to ZooKeeper
    w.stop("c0")
    w.stop("c1")
    back = steps(w.cutover("--rollback", "--json"))
    assert set(back) == {"record-mode-back", "lift-fence"} and not w.zk.exists(GroupPaths(w.group).offsets)
    w.pykafka("k2")
    time.sleep(3)
    judged(w, producer.stop())
    assert not w.log("stale").exists() or not load_many([w.log("stale")]), "the stale member consumed"
    print(
        f"pykafka cutover: handover {handover_s(w, {'k0', 'k1'}, {'c0', 'c1'}):.2f}s; migrator's part "
        f"{migrators_part(forward):.2f}s; join c0 {join_s(w, 'c0'):.2f}s; rollback handover "
        f"{handover_s(w, {'c0', 'c1'}, {'k2'}):.2f}s"
    )
    admin.close()


def test_refusals_write_nothing_and_live_kafka_members_stop_the_offsets_step(walk: Walk, cluster: Any) -> None:
    w = walk
    produced: list[tuple[str, int, int]] = []
    sent = dict.fromkeys(range(PARTITIONS), 0)

    def batch() -> None:
        for p in range(PARTITIONS):
            produce(w.cluster, w.topic, [b"r"] * 3, partition=p)
            produced.extend((w.topic, p, sent[p] + i) for i in range(3))
            sent[p] += 3

    w.peers.ours("b0", bridge=True)
    assert "set-mode" in w.cutover().single_error(2)
    w.peers.ours("l0")
    wait_until(lambda: len(w.zk.get_children(GroupPaths(w.group).ids)) == 2, 30, what="both registered")
    mixed = w.cutover().single_error(2)
    assert "mixes bridges" in mixed and f"{w.group}_l0" in mixed
    w.untouched()
    w.stop("b0")
    batch()
    w.processed(produced, "the legacy member processes")
    planned = w.cutover("--dry-run", "--json")
    assert planned.code == 0 and json.loads(planned.stdout)["planned"][:2] == ["fence", "wait-empty"]
    w.untouched()
    # on a terminal, the wait shows who is left on one line rewritten in place
    controller, terminal = pty.openpty()
    waiting = subprocess.Popen([sys.executable, "-m", "migrator", *w.args("--timeout", "3")],
                               stdout=subprocess.PIPE, stderr=terminal, text=True, cwd=ROOT)  # fmt: skip
    waiting.communicate(timeout=60)
    os.close(terminal)
    screen = _drain(controller)
    assert waiting.returncode == 1 and "\r\x1b[Kwaiting " in screen and "1 legacy member(s) registered" in screen
    w.stop("l0")
    # a Kafka consumer in the group (of another topic, so it commits nothing here) refuses the offsets step
    other = f"{w.topic}-other"
    make_topic(cluster, other, partitions=1)
    admin = KafkaAdmin(w.cluster.bootstrap_servers)
    kafka_before = admin.group_offsets(w.group)
    w.others["c0"] = ConfluentMember(w.cluster.bootstrap_servers, w.group, other, "c0", w.log("c0"))
    wait_until(lambda: not admin.describe_group(w.group).is_empty, 30, what="c0 in the Kafka group")
    assert "live member" in w.cutover().single_error(2)
    assert admin.group_offsets(w.group) == kafka_before and w.zk.exists(GroupPaths(w.group).mode) is None
    w.stop("c0")
    resumed = steps(w.cutover("--json"))
    assert set(resumed) == {"carry-offsets", "record-mode"}
    zookeeper = {TopicPartition(w.topic, int(p)): int(w.zk.get(f"{GroupPaths(w.group).offsets}/{w.topic}/{p}")[0])
                 for p in w.zk.get_children(f"{GroupPaths(w.group).offsets}/{w.topic}")}  # fmt: skip
    assert admin.group_offsets(w.group) == zookeeper == {TopicPartition(w.topic, p): 3 for p in range(PARTITIONS)}
    admin.close()


def test_interrupted_anywhere_and_run_again_each_step_is_written_once(
    cluster: Any, zk_client: KazooClient, unique_group: str, unique_topic: str
) -> None:
    """Ctrl-C at a different moment of each run (before, during or between the steps), then runs again until
    one ends: each step was carried out by one run only, and there is one audit entry."""
    make_topic(cluster, unique_topic, partitions=2)
    paths = GroupPaths(unique_group)
    for p in range(2):  # a stopped Scala group: its offsets in ZooKeeper only
        zk_client.create(paths.offset(unique_topic, p), b"7", makepath=True)
    zk_client.ensure_path(paths.ids)
    args = ["cutover", "-g", unique_group, "-z", cluster.zookeeper, "-b", cluster.bootstrap_servers, "--zk-auth", ADMIN]
    said: list[str] = []
    for delay in (1.0, 1.3, 1.45, 1.6, 1.75, 1.9, 2.1, 2.4, 3.0):
        proc = cli.start(*args)
        time.sleep(delay)
        run = cli.interrupt(proc)
        said += run.stdout.splitlines()
        print(f"interrupted after {delay}s: exit {run.code}, {run.stdout.splitlines()}")
        if run.code == 0:
            break
    final = cli.run(*args, "--json")
    assert final.code == 0 and json.loads(final.stdout)["state"] == "cut-over", final
    for step in ("fenced:", "offsets carried", "mode recorded"):
        assert sum(line.startswith(step) for line in said) <= 1, said
    assert len(zk_client.get_children(paths.audit)) == 1
    admin = KafkaAdmin(cluster.bootstrap_servers)
    assert admin.group_offsets(unique_group) == {TopicPartition(unique_topic, p): 7 for p in range(2)}
    admin.close()
