"""`migrator fleet-scan` against the real cluster, with simulated bridges.

A simulated bridge is what the scan can observe of a real one: its `ids` and `migration/ids` nodes, a live
Kafka member in the Kafka group with `client.id` = its consumerId (a paused `PollingMember`, committing
through the group like an embedded member), and, on every mode change, a published authority with a new
generation and `owners` rewritten to the assignment of the authority it obeys. A bridge made with
`obey=False` keeps publishing zookeeper, so a switch of its group can never converge.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition as KafkaTP
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from migrator.cli.main import main
from migrator.errors import EXIT_INTERRUPTED
from migrator.fleet.lock import FleetLock
from migrator.fleet.plan import Plan
from migrator.protocol.codecs import Authority, PublishedAuthority, Registration, encode_offset, encode_owner
from migrator.zk.paths import GroupPaths
from tests.helpers import cli
from tests.helpers.kafka import PollingMember, make_topic, produce
from tests.helpers.wait import wait_until
from tests.helpers.zk import zk_client as open_zk

RECORDS_PER_PARTITION = 5


class SimGroup:
    """One consumer group of simulated bridges (plus optional legacy members) on topic `topic`."""

    def __init__(
        self,
        cluster,
        zk: KazooClient,
        group: str,
        topic: str,
        partitions: int,
        bridges: int = 2,
        legacy: int = 0,
        mode: str | None = None,
        obey: bool = True,
    ) -> None:
        self.zk, self.group, self.topic, self.partitions, self.obey = zk, group, topic, partitions, obey
        self.paths = GroupPaths(group)
        self.bridges = [f"{group}_bridge{i}" for i in range(bridges)]
        self.legacy = [f"{group}_legacy{i}" for i in range(legacy)]
        self.generation = dict.fromkeys(self.bridges, 0)
        data = Registration({topic: 1}, timestamp_ms=int(time.time() * 1000)).encode()
        for cid in self.legacy + self.bridges:
            zk.create(self.paths.member(cid), data, ephemeral=True, makepath=True)
        for cid in self.bridges:
            zk.create(self.paths.migration_member(cid), data, ephemeral=True, makepath=True)
        if mode is not None:
            zk.create(self.paths.mode, mode.encode(), makepath=True)
        for p in range(partitions):
            zk.create(self.paths.offset(topic, p), encode_offset(RECORDS_PER_PARTITION), makepath=True)
        self.members = [
            PollingMember(
                cluster.bootstrap_servers, group, topic, cid, paused=True, config={"session.timeout.ms": 10_000}
            )
            for cid in self.bridges
        ]
        wait_until(
            lambda: all(m.assigned for m in self.members) and sum(len(m.assigned) for m in self.members) == partitions,
            30,
            what=f"every embedded member of {group} assigned",
        )
        commits = [m.commit([KafkaTP(topic, p, RECORDS_PER_PARTITION) for p in m.assigned]) for m in self.members]
        assert all(c.wait(30) for c in commits), f"offsets of {group} not committed through the group"
        self._events: queue.Queue[str | None] = queue.Queue()
        self._worker = threading.Thread(target=self._react, daemon=True)
        self._worker.start()
        self._apply(Authority.ZOOKEEPER)
        zk.DataWatch(self.paths.mode, self._on_mode)

    def _on_mode(self, data: bytes | None, _stat: object) -> None:
        self._events.put(None if data is None else data.decode())

    def _react(self) -> None:
        while True:
            value = self._events.get()
            if value == "stop":
                return
            all_bridges = not self.legacy
            kafka = value == "kafka" and all_bridges and self.obey
            self._apply(Authority.KAFKA if kafka else Authority.ZOOKEEPER)

    def _apply(self, authority: Authority) -> None:
        """Release owners, claim them under `authority`, then publish it (as a bridge's rebalance does)."""
        try:
            for topic in self.zk.get_children(self.paths.owners):
                for p in self.zk.get_children(self.paths.owners_topic(topic)):
                    self.zk.delete(self.paths.owner(topic, int(p)))
        except NoNodeError:
            pass
        if authority is Authority.KAFKA:
            owners = {p: f"{m_cid}-0" for m_cid, m in zip(self.bridges, self.members, strict=True) for p in m.assigned}
        else:  # range over the sorted thread ids of every member
            threads = sorted(f"{cid}-0" for cid in self.bridges + self.legacy)
            owners = {p: threads[p * len(threads) // self.partitions] for p in range(self.partitions)}
        for p, thread in owners.items():
            self.zk.create(self.paths.owner(self.topic, p), encode_owner(thread), ephemeral=True, makepath=True)
        for cid in self.bridges:
            self.generation[cid] += 1
            pub = PublishedAuthority(
                authority, self.generation[cid], int(time.time() * 1000), kafka_member_id=cid, partitions=1
            )
            path = self.paths.published_authority(cid)
            if self.zk.exists(path):
                self.zk.set(path, pub.encode())
            else:
                self.zk.create(path, pub.encode(), ephemeral=True, makepath=True)

    def mode(self) -> str | None:
        try:
            return self.zk.get(self.paths.mode)[0].decode()
        except NoNodeError:
            return None

    def close(self) -> None:
        self._events.put("stop")
        for m in self.members:
            m.close()


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    """One small local[2] Spark for every scan of this module (the CLI reuses an active session)."""
    from migrator.fleet.pipeline import spark_session

    session = spark_session("local[2]", "fleet-scan-tests", {"spark.default.parallelism": "2"})
    yield session
    session.stop()


@pytest.fixture
def sims(cluster, zk_client) -> Iterator[list[SimGroup]]:
    made: list[SimGroup] = []
    yield made
    for sim in made:
        sim.close()
    from migrator.fleet.synthetic import remove_groups

    remove_groups(zk_client, [sim.group for sim in made])


def _sim(cluster, zk, sims, group, topic, **kw) -> SimGroup:
    sim = SimGroup(cluster, zk, group, topic, 2, **kw)
    sims.append(sim)
    return sim


def _exact_topic(cluster, name: str) -> str:
    make_topic(cluster, name, 2)
    for p in range(2):
        produce(cluster, name, [f"r{i}" for i in range(RECORDS_PER_PARTITION)], partition=p)
    return name


def _scan(cluster, *args: str) -> int:
    return _scan_ensembles(cluster.zookeeper, "-b", cluster.bootstrap_servers, *args)


def _scan_ensembles(ensembles: str, *args: str) -> int:
    """`fleet-scan -z ensembles`, with no wait for stability and no progress bar."""
    return main(["fleet-scan", "-z", ensembles, "--stable-for", "0s", "--no-progress", *args])


@pytest.mark.slow
def test_ready_groups_switch_and_converge_legacy_never_and_rollback_restores(
    cluster, zk_client, sims, spark, unique_topic, tmp_path: Path, capsys
):
    topic = _exact_topic(cluster, unique_topic)
    base = unique_topic.replace("t-", "fs-", 1)
    absent = _sim(cluster, zk_client, sims, f"{base}-a", topic)
    was_zk = _sim(cluster, zk_client, sims, f"{base}-b", topic, mode="zookeeper")
    legacy = _sim(cluster, zk_client, sims, f"{base}-c", topic, legacy=1)
    plan_file = tmp_path / "plan.json"
    rc = _scan(
        cluster,
        "--include",
        f"^{base}-",
        "--apply",
        "--wave-size",
        "1",
        "--wave-interval",
        "4s",
        "--plan-file",
        str(plan_file),
        "--output",
        str(tmp_path),
        "--format",
        "json",
    )
    out = capsys.readouterr()
    assert rc == 0, (out.err, plan_file.read_text() if plan_file.exists() else "")
    assert (absent.mode(), was_zk.mode(), legacy.mode()) == ("kafka", "kafka", None)
    plan = Plan.load(plan_file)
    assert [(g.group, g.wave, g.outcome) for g in plan.groups] == [
        (absent.group, 1, "switched"),
        (was_zk.group, 2, "switched"),
    ]
    assert [g.previous_mode for g in plan.groups] == [None, "zookeeper"]
    rows = (tmp_path / "fleet-scan.jsonl").read_text()
    assert f'"group": "{legacy.group}"' in rows and "MIGRATING" in rows

    # a fresh scan sees the switched groups as KAFKA (converged)
    rc = _scan(cluster, "--include", f"^{base}-", "--output", str(tmp_path / "after"), "--format", "csv")
    assert rc == 0
    after = (tmp_path / "after" / "fleet-scan.csv").read_text()
    assert after.count(",KAFKA,") == 2 and after.count(",MIGRATING,") == 1

    rc = _scan(cluster, "--rollback", str(plan_file))
    assert rc == 0, capsys.readouterr().err
    assert (absent.mode(), was_zk.mode(), legacy.mode()) == ("zookeeper", "zookeeper", None)
    assert [g.outcome for g in Plan.load(plan_file).groups] == ["restored", "restored"]
    wait_until(
        lambda: all(
            PublishedAuthority.decode(zk_client.get(s.paths.published_authority(c))[0]).authority is Authority.ZOOKEEPER
            for s in (absent, was_zk)
            for c in s.bridges
        ),
        10,
        what="bridges back on zookeeper",
    )


@pytest.mark.slow
def test_a_wave_whose_lag_grows_is_rolled_back(cluster, zk_client, sims, spark, unique_topic, tmp_path: Path):
    topic = _exact_topic(cluster, unique_topic)
    base = unique_topic.replace("t-", "fl-", 1)
    sim = _sim(cluster, zk_client, sims, f"{base}-a", topic)
    flooded = threading.Event()
    obey = sim._apply

    def obey_after_the_flood(authority: Authority) -> None:  # else the wave may converge, and end, first
        if authority is Authority.KAFKA:
            flooded.wait(300)
        obey(authority)

    sim._apply = obey_after_the_flood  # type: ignore[method-assign]

    def flood() -> None:  # the Kafka cluster "suffers": nobody consumes what arrives after the switch
        wait_until(lambda: sim.mode() == "kafka", 300, what="the switch")  # after the scan: minutes under load
        produce(cluster, topic, [f"late{i}" for i in range(300)])
        flooded.set()

    flooder = threading.Thread(target=flood, daemon=True)
    flooder.start()
    plan_file = tmp_path / "plan.json"
    rc = _scan(
        cluster,
        "--include",
        f"^{base}-",
        "--apply",
        "--wave-interval",
        "30s",
        "--max-lag-growth",
        "100",
        "--plan-file",
        str(plan_file),
    )
    flooder.join(timeout=300)
    assert rc == 1
    assert sim.mode() == "zookeeper"
    plan = Plan.load(plan_file)
    assert plan.groups[0].outcome == "rolled_back"
    assert any("lag-growth" in p for p in plan.waves[0].problems[f"{cluster.zookeeper}/{sim.group}"])


@pytest.mark.slow
def test_a_group_whose_bridges_do_not_obey_is_rolled_back(cluster, zk_client, sims, spark, unique_topic, tmp_path):
    topic = _exact_topic(cluster, unique_topic)
    base = unique_topic.replace("t-", "fn-", 1)
    sim = _sim(cluster, zk_client, sims, f"{base}-a", topic, obey=False)
    rc = _scan(
        cluster, "--include", f"^{base}-", "--apply", "--wave-interval", "3s", "--plan-file", str(tmp_path / "p.json")
    )
    assert rc == 1
    assert sim.mode() == "zookeeper"


def test_a_second_apply_refuses_with_the_holders_identity(cluster, spark, capsys, tmp_path: Path):
    with open_zk(cluster) as holder:
        with FleetLock(holder, "first-run") as lock:
            rc = _scan(cluster, "--include", "^no-such-group$", "--apply")
            err = capsys.readouterr().err
            assert rc == 2
            assert lock.identity in err and "first-run" in err
        rc = _scan(cluster, "--include", "^no-such-group$", "--apply", "--plan-file", str(tmp_path / "p.json"))
        assert rc == 0  # released: the next one proceeds


@pytest.mark.slow
def test_a_synthetic_fleet_of_2000_groups_is_classified_correctly(cluster, zk_client, spark, tmp_path: Path):
    """The synthetic shapes' expected statuses are those of a scan that cannot consult Kafka, so the fleet lives
    in a chroot that registers no broker (a scan finds the brokers under /brokers/ids as --apply does)."""
    from migrator.fleet import synthetic
    from migrator.fleet.classify import reason_code
    from migrator.fleet.model import FleetRow

    prefix = f"syn{int(time.time())}"
    chroot = f"/fleet-synthetic-{prefix}"
    zk_client.ensure_path(chroot)
    ensemble = f"{cluster.zookeeper}{chroot}"
    with open_zk(ensemble, timeout=30) as writer:
        try:
            fleet = synthetic.make_fleet(writer, 2000, prefix=prefix, seed=7, now_ms=int(time.time() * 1000))
            rc = _scan_ensembles(ensemble, "--include", f"^{prefix}-", "--output", str(tmp_path), "--format", "json")
            assert rc == 0
            rows = [FleetRow.from_dict(json.loads(x)) for x in (tmp_path / "fleet-scan.jsonl").read_text().splitlines()]
            assert len(rows) == 2000
            wrong = [
                (r.group, fleet.shapes[r.group].shape, r.status, r.reasons)
                for r in rows
                if r.status != fleet.shapes[r.group].expected_status.value
                or fleet.shapes[r.group].expected_reason
                not in {reason_code(x) for x in r.reasons} | {c for x in r.reasons for c in x.replace(":", " ").split()}
            ]
            assert not wrong, wrong[:5]
        finally:
            synthetic.remove_fleet(writer, prefix)
            zk_client.delete(chroot, recursive=True)


def test_ensembles_separated_by_semicolons_are_scanned_together(cluster, zk_client, spark, tmp_path: Path):
    """Two ensembles in one run (a chroot stands in for the second): each row names its own ensemble."""
    from migrator.fleet import synthetic

    chroot = f"/fleet-second-{int(time.time() * 1000)}"
    zk_client.ensure_path(chroot)
    second = f"{cluster.zookeeper}{chroot}"
    prefix = f"two{int(time.time())}"
    with open_zk(cluster) as first_writer, open_zk(second) as second_writer:
        try:
            a = synthetic.make_fleet(first_writer, 30, prefix=prefix, seed=1, now_ms=int(time.time() * 1000))
            b = synthetic.make_fleet(second_writer, 20, prefix=prefix, seed=2, now_ms=int(time.time() * 1000))
            rc = _scan_ensembles(f"{cluster.zookeeper};{second}", "--include", f"^{prefix}-", "--output", str(tmp_path),
                                 "--format", "json", "--plan-file", str(tmp_path / "p.json"))  # fmt: skip
            assert rc == 0
            rows = [json.loads(x) for x in (tmp_path / "fleet-scan.jsonl").read_text().splitlines()]
            by_ensemble = {
                e: {r["group"]: r["status"] for r in rows if r["ensemble"] == e} for e in (cluster.zookeeper, second)
            }
            assert by_ensemble[cluster.zookeeper] == {g: s.value for g, s in a.expected().items()}
            assert by_ensemble[second] == {g: s.value for g, s in b.expected().items()}
        finally:
            synthetic.remove_fleet(first_writer, prefix)
            synthetic.remove_fleet(second_writer, prefix)
            zk_client.delete(chroot, recursive=True)


@pytest.mark.slow
def test_real_bridges_are_switched_and_converge(cluster, zk_client, spark, unique_group, unique_topic, tmp_path):
    """The lead's bridge connectors (not simulations): READY, switched by --apply, converged as KAFKA."""
    from migrator import ConsumerConnector
    from migrator.consumer.stream import ConsumerTimeout

    topic = _exact_topic(cluster, unique_topic)
    props = {
        "zookeeper.connect": cluster.zookeeper,
        "group.id": unique_group,
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": "200",
        "coordination.migration.enabled": "true",
        "coordination.migration.bootstrap.servers": cluster.bootstrap_servers,
        "rebalance.backoff.ms": "300",
        "coordination.migration.poll.interval.ms": "200",
        "zookeeper.session.timeout.ms": "6000",
    }
    bridges = [ConsumerConnector({**props, "consumer.id": f"b{i}"}) for i in range(2)]
    try:
        streams = [b.create_message_streams({topic: 1})[topic][0] for b in bridges]
        wait_until(lambda: sum(len(b.owned) for b in bridges) == 2, 60, what="both partitions owned")
        seen = 0

        def read_every_record() -> bool:
            nonlocal seen
            for stream in streams:
                try:
                    for _msg in stream:
                        seen += 1
                except ConsumerTimeout:
                    pass
            return seen >= 2 * RECORDS_PER_PARTITION

        wait_until(read_every_record, 60, interval=0, what="every record read")
        assert seen == 2 * RECORDS_PER_PARTITION
        for b in bridges:
            b.commit_offsets()
        plan_file = tmp_path / "plan.json"
        rc = _scan(cluster, "--include", f"^{unique_group}$", "--apply", "--wave-interval", "8s",
                   "--plan-file", str(plan_file), "--output", str(tmp_path), "--format", "json")  # fmt: skip
        rows = (tmp_path / "fleet-scan.jsonl").read_text()
        assert rc == 0, (rows, plan_file.read_text())
        assert '"status": "READY"' in rows
        assert zk_client.get(GroupPaths(unique_group).mode)[0] == b"kafka"
        assert all(b.authority == "kafka" for b in bridges)
        rc = _scan(cluster, "--include", f"^{unique_group}$", "--output", str(tmp_path / "after"), "--format", "csv")
        assert rc == 0 and ",KAFKA," in (tmp_path / "after" / "fleet-scan.csv").read_text()
    finally:
        for b in bridges:
            b.shutdown()
        from migrator.fleet.synthetic import remove_groups

        remove_groups(zk_client, [unique_group])


def test_ctrl_c_during_apply_names_the_switched_group_and_the_plan_and_rollback_restores_it(
    cluster, zk_client, sims, spark, unique_topic, tmp_path: Path, capsys
):
    """A dry run without -b previews the apply (the brokers found in ZooKeeper, the rows as JSON on stdout);
    Ctrl-C during the wave's watch exits 130 naming what stays switched and the plan, which says
    `interrupted`; `--rollback` restores the group and watches it settle back on zookeeper."""
    topic = _exact_topic(cluster, unique_topic)
    base = unique_topic.replace("t-", "fi-", 1)
    sim = _sim(cluster, zk_client, sims, f"{base}-a", topic, obey=False)  # never converges: watched to the end
    dry = tmp_path / "dry.json"
    rc = _scan_ensembles(cluster.zookeeper, "--include", f"^{base}-", "--format", "json", "--plan-file", str(dry))
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert [json.loads(line)["status"] for line in out.out.splitlines()] == ["READY"], out.err
    assert [g.group for g in Plan.load(dry).groups] == [sim.group]

    def ctrl_c_while_watching() -> None:
        wait_until(lambda: sim.mode() == "kafka", 120, what="the switch")
        time.sleep(1)  # into the wave's watch
        os.kill(os.getpid(), signal.SIGINT)

    interrupter = threading.Thread(target=ctrl_c_while_watching, daemon=True)
    interrupter.start()
    plan_file = tmp_path / "plan.json"
    argv = ["--include", f"^{base}-", "--apply", "--wave-interval", "120s", "--plan-file", str(plan_file)]
    rc = _scan_ensembles(cluster.zookeeper, *argv)
    interrupter.join(timeout=10)
    err = capsys.readouterr().err
    assert rc == EXIT_INTERRUPTED, err
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert f"{cluster.zookeeper}/{sim.group}" in line and str(plan_file) in line and "--rollback" in line
    plan = Plan.load(plan_file)
    assert plan.result == "interrupted" and [g.outcome for g in plan.groups] == ["switched"]
    assert sim.mode() == "kafka"

    rc = _scan_ensembles(cluster.zookeeper, "--rollback", str(plan_file))
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert sim.mode() == "zookeeper"
    assert f"settled back on zookeeper: {cluster.zookeeper}/{sim.group}" in out.out


def test_connection_from_environment_and_command_config_and_each_groups_dialect(
    cluster, zk_client, spark, capsys, monkeypatch, tmp_path: Path
):
    """As an operator scripts it: the ensemble from $MIGRATOR_ZOOKEEPER, the rows as JSON lines on stdout, each
    naming its group's legacy dialect; a group whose nodes match neither layout is marked, not guessed. The
    connection also comes from --command-config (a subprocess: its unreachable ensemble fails before Spark)."""
    chroot = f"/fleet-dialects-{int(time.time() * 1000)}"
    consumers = f"{chroot}/consumers"
    zk_client.create(f"{consumers}/scala/ids/scala-1", Registration({"t": 1}).encode(), makepath=True)
    zk_client.create(f"{consumers}/scala/owners/t/0", encode_owner("scala-1-0"), makepath=True)
    zk_client.create(f"{consumers}/pk/ids/pk-1", b"t", makepath=True)
    zk_client.create(f"{consumers}/pk/owners/b't'/1-0", b"pk-1", makepath=True)
    zk_client.create(f"{consumers}/unknown/ids/u-1", b"{not a registration", makepath=True)
    monkeypatch.setenv("MIGRATOR_ZOOKEEPER", f"{cluster.zookeeper}{chroot}")
    try:
        capsys.readouterr()
        rc = main(["fleet-scan", "--format", "json", "--no-progress", "--plan-file", str(tmp_path / "plan.json")])
        assert rc == 0
        rows = {r["group"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
        dialects = {g: r["dialect"] for g, r in rows.items()}
        assert dialects == {"scala": "scala", "pk": "pykafka", "unknown": "unreadable"}
        assert any(r.startswith("layout-unreadable: ids/u-1") for r in rows["unknown"]["reasons"])
    finally:
        zk_client.delete(chroot, recursive=True)
    config = tmp_path / "scan.properties"
    config.write_text("zookeeper.connect=127.0.0.1:1\nsecurity.protocol=PLAINTEXT\n")
    monkeypatch.delenv("MIGRATOR_ZOOKEEPER")
    line = cli.run("fleet-scan", "--command-config", str(config), "--connect-timeout", "1").single_error(1)
    assert "127.0.0.1:1" in line


def test_the_scan_reads_zookeeper_through_its_tls_port(cluster, zk_client, spark, capsys, tmp_path: Path):
    """`--command-config` with Kafka's `zookeeper.ssl.*` keys: both the listing and each chunk's one-socket
    reader go through ZooKeeper's TLS port (a plaintext client gets no session there)."""
    secured = getattr(cluster, "secured", None)
    if secured is None or not secured.zookeeper_tls:
        pytest.skip("the cluster has no ZooKeeper TLS port")
    chroot = f"/fleet-tls-{int(time.time() * 1000)}"
    zk_client.create(f"{chroot}/consumers/scala/ids/scala-1", Registration({"t": 1}).encode(), makepath=True)
    zk_client.create(f"{chroot}/consumers/scala/owners/t/0", encode_owner("scala-1-0"), makepath=True)
    tls = {**secured.zookeeper_tls_properties(), "zookeeper.connect": f"{secured.zookeeper_tls}{chroot}"}
    config = tmp_path / "scan-tls.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in tls.items()))
    try:
        capsys.readouterr()
        argv = ["fleet-scan", "--command-config", str(config), "--connect-timeout", "60", "--format", "json"]
        assert main([*argv, "--no-progress", "--plan-file", str(tmp_path / "plan.json")]) == 0
        rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [(r["group"], r["dialect"]) for r in rows] == [("scala", "scala")]
    finally:
        zk_client.delete(chroot, recursive=True)
