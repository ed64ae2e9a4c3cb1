"""An operator's mistakes on the real cluster, through the command as an operator runs it (a subprocess).

Every mistake gets its documented exit code, exactly one `error:` line, no traceback, and leaves
ZooKeeper (all of it but the broker's own nodes) and the group's Kafka offsets as they were.
"""

from __future__ import annotations

import contextlib
import inspect
import signal
import subprocess
import sys
import threading
import time
import types
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.recipe.watchers import DataWatch

from migrator.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_NOT_FOUND, EXIT_OK, EXIT_REFUSED
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.protocol.codecs import Registration
from migrator.protocol.partition import TopicPartition
from migrator.zk.paths import GroupPaths
from tests.helpers import cli
from tests.helpers.fake_group import PLAIN, FakeGroup
from tests.helpers.kafka import StalledMember, make_topic
from tests.helpers.wait import wait_until

PARTITIONS = 3
ZK_OFFSETS = {0: 5, 1: 6, 2: 7}
KAFKA_OFFSETS = {0: 1, 1: 2, 2: 3}
STALL_MS = 20000
"""How long a stalled member holds up a rebalance: the refused `set-mode` must run inside it (a CLI start takes
a few seconds on a loaded host), and `--wait` lasts until it ends."""


@pytest.fixture(autouse=True, scope="module")
def _coordinator_ready(cluster: Any) -> None:
    """A fresh cluster creates __consumer_offsets on the first group request and answers none until then."""
    admin = KafkaAdmin(cluster.bootstrap_servers, timeout_s=5)

    def answers() -> bool:
        try:
            admin.describe_group("warm-up")
        except KafkaUnavailable:
            return False
        return True

    wait_until(answers, timeout=120)


class Seeded:
    """A group with offsets in both stores and a registered (ephemeral) member: something to damage."""

    def __init__(self, cluster: Any, zk: KazooClient, group: str, topic: str) -> None:
        self.cluster, self.zk, self.group, self.topic = cluster, zk, group, topic
        self.admin = KafkaAdmin(cluster.bootstrap_servers)
        p = GroupPaths(group)
        for partition, offset in ZK_OFFSETS.items():
            zk.create(p.offset(topic, partition), str(offset).encode(), makepath=True)
        zk.create(p.member(f"{group}_legacy"), Registration({topic: 1}).encode(), makepath=True, ephemeral=True)
        self.admin.alter_offsets(group, {TopicPartition(topic, q): o for q, o in KAFKA_OFFSETS.items()})

    def state(self) -> tuple[Any, Any]:
        return cli.state_of(self.zk, self.admin, self.group, self.topic, PARTITIONS)

    def base(self, *command: str, bootstrap: bool = False) -> list[str]:
        argv = [*command, "-z", self.cluster.zookeeper, "-g", self.group]
        return argv + (["-b", self.cluster.bootstrap_servers] if bootstrap else [])

    def refused(self, argv: list[str], code: int, **kw: Any) -> str:
        """Run, assert the mistake contract, and that nothing changed; return the error line."""
        before = self.state()
        line = cli.run(*argv, **kw).single_error(code)
        assert self.state() == before, f"{argv} wrote something"
        return line


@pytest.fixture
def seeded(cluster: Any, zk_client: KazooClient, unique_group: str, unique_topic: str) -> Seeded:
    make_topic(cluster, unique_topic, partitions=PARTITIONS)
    return Seeded(cluster, zk_client, unique_group, unique_topic)


@pytest.fixture
def chroot(zk_client: KazooClient) -> Iterator[str]:
    """A chroot with no Kafka under it: brokers cannot be found there."""
    path = f"/chroot-{uuid.uuid4().hex[:8]}"
    zk_client.create(path)
    yield path
    zk_client.delete(path, recursive=True)


# --- safety: no switch the command cannot check --------------------------------------------------------


def test_set_mode_zookeeper_without_b_finds_the_brokers_and_sees_the_plain_consumer(
    cluster: Any,
    zk_client: KazooClient,
    fake_group: FakeGroup,
) -> None:
    """The issue's first case: without -b it warned, switched, and two members owned partitions 1 and 2."""
    fake_group.add_bridge_and_plain()
    zk_client.create(fake_group.paths.mode, b"kafka", makepath=True)
    before = cli.zk_state(zk_client)

    done = cli.run("set-mode", "zookeeper", "-z", cluster.zookeeper, "-g", fake_group.group, "--wait")

    line = done.single_error(EXIT_REFUSED)
    assert "plain Kafka consumer(s) are in the group: plain-app" in line
    assert f"brokers: /brokers/ids ({cluster.bootstrap_servers})" in done.stderr
    assert "switch complete" not in done.stdout
    assert cli.zk_state(zk_client) == before


def test_set_mode_kafka_without_b_finds_the_brokers(
    cluster: Any,
    fake_group: FakeGroup,
) -> None:
    bridge = fake_group.add_bridge(f"{fake_group.group}_b1")
    fake_group.wait_kafka_members({bridge})
    done = cli.run("set-mode", "kafka", "-z", cluster.zookeeper, "-g", fake_group.group, "--dry-run")
    assert done.code == EXIT_OK, done.stderr
    assert "preflight: ok" in done.stdout


@pytest.mark.parametrize("mode", ["zookeeper", "kafka"])
def test_a_switch_whose_kafka_cannot_be_found_is_refused_unless_forced(
    cluster: Any, zk_client: KazooClient, chroot: str, mode: str
) -> None:
    group = "orders"
    p = GroupPaths(group)
    zk_client.create(chroot + p.member(f"{group}_b1"), Registration({"t": 1}).encode(), makepath=True)
    zk_client.create(chroot + p.migration_member(f"{group}_b1"), Registration({"t": 1}).encode(), makepath=True)
    argv = ["set-mode", mode, "-z", cluster.zookeeper + chroot, "-g", group]
    before = cli.zk_state(zk_client)

    line = cli.run(*argv).single_error(EXIT_REFUSED)
    assert "no --bootstrap-servers given, no broker is registered under /brokers/ids and no bridge" in line
    assert cli.zk_state(zk_client) == before

    assert cli.run(*argv, "--force", "--reason", "drill").code == EXIT_OK
    assert zk_client.get(chroot + p.mode)[0] == mode.encode()


def test_without_brokers_ids_the_brokers_the_bridges_published_are_used(
    cluster: Any,
    zk_client: KazooClient,
    chroot: str,
    fake_group: FakeGroup,
) -> None:
    """A KRaft cluster has no /brokers/ids (a chroot without Kafka stands in): a bridge's publication names them."""
    from migrator.protocol.codecs import Authority, PublishedAuthority

    group, p = fake_group.group, fake_group.paths
    cid = f"{group}_b1"
    for path in (p.member(cid), p.migration_member(cid)):
        zk_client.create(chroot + path, Registration({fake_group.topic: 1}).encode(), makepath=True)
    pa = PublishedAuthority(Authority.KAFKA, 3, int(time.time() * 1000), bootstrap=cluster.bootstrap_servers)
    zk_client.create(chroot + p.published_authority(cid), pa.encode(), makepath=True)
    zk_client.create(chroot + p.mode, b"kafka")
    fake_group.add_kafka_member(cid)
    fake_group.add_kafka_member(PLAIN)
    fake_group.wait_kafka_members({cid, PLAIN})
    before = cli.zk_state(zk_client)

    done = cli.run("set-mode", "zookeeper", "-z", cluster.zookeeper + chroot, "-g", group)

    assert "plain Kafka consumer(s) are in the group: plain-app" in done.single_error(EXIT_REFUSED)
    assert f"brokers: the group's bridges ({cluster.bootstrap_servers})" in done.stderr
    assert cli.zk_state(zk_client) == before


def test_a_real_bridge_publishes_its_brokers(cluster: Any, zk_client: KazooClient, unique_group: str) -> None:
    from migrator.protocol.codecs import PublishedAuthority

    topic = f"{unique_group}-t"
    make_topic(cluster, topic, partitions=1)
    proc = cli.start("console-consumer", "-z", cluster.zookeeper, "-g", unique_group, "-t", topic, "--migration",
                     "-b", cluster.bootstrap_servers)  # fmt: skip
    try:
        authority = GroupPaths(unique_group).authority

        def published() -> str:
            names = zk_client.get_children(authority) if zk_client.exists(authority) else []
            return "".join(PublishedAuthority.decode(zk_client.get(f"{authority}/{n}")[0]).bootstrap for n in names)

        assert wait_until(published, timeout=60, what="a published authority") == cluster.bootstrap_servers
    finally:
        assert cli.interrupt(proc).code == EXIT_OK


# --- bad input: one line, its exit code, nothing written -------------------------------------------------


@pytest.mark.parametrize("connect", ["127.0.0.1:abc", "127.0.0.1:99999", ""])
@pytest.mark.parametrize("command", [["get-mode"], ["set-mode", "zookeeper"]], ids=" ".join)
def test_bad_connect_string(seeded: Seeded, command: list[str], connect: str) -> None:
    line = seeded.refused([*command, "-z", connect, "-g", seeded.group], EXIT_REFUSED)
    assert line.startswith("error: --zookeeper: ") and "host:port" in line


@pytest.mark.parametrize(
    ("prop", "words"),
    [
        ("no.such.prop=1", 'No such configuration property: "no.such.prop"'),
        ("security.protocol=SASL_SSL", "set sasl.mechanism too"),
    ],
)
def test_kafka_property_the_client_refuses(seeded: Seeded, prop: str, words: str) -> None:
    line = seeded.refused([*seeded.base("status"), "--kafka-property", prop], EXIT_REFUSED)
    assert line.startswith("error: --kafka-property: ") and words in line


def test_export_to_a_missing_directory(seeded: Seeded) -> None:
    argv = [*seeded.base("offsets", "export"), "--store", "zookeeper", "-o", "/nonexistent/dir/x.csv"]
    assert "directory /nonexistent/dir does not exist" in seeded.refused(argv, EXIT_REFUSED)


def test_export_of_an_unknown_topic(seeded: Seeded) -> None:
    argv = [*seeded.base("offsets", "export"), "--store", "kafka", "-t", "nosuchtopic"]
    assert seeded.refused(argv, EXIT_REFUSED) == "error: topic nosuchtopic does not exist in Kafka"


def test_metrics_port_in_use(seeded: Seeded) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        argv = [*seeded.base("console-consumer"), "-t", seeded.topic, "--metrics-port", str(port)]
        line = seeded.refused([*argv, "--max-messages", "1"], EXIT_REFUSED)
    assert line.startswith(f"error: --metrics-port {port}: cannot listen there")


# --- a chroot, /consumers or a group that does not exist ---------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["get-mode"], ["status"], ["set-mode", "zookeeper", "--dry-run"], ["acl", "protect", "--admin", "digest:o:p"]],
    ids=" ".join,
)
def test_missing_chroot(seeded: Seeded, command: list[str]) -> None:
    typo = f"/kafka-{uuid.uuid4().hex[:6]}"
    argv = [*command, "-z", seeded.cluster.zookeeper + typo, "-g", seeded.group]
    line = seeded.refused(argv, EXIT_NOT_FOUND)
    where = seeded.cluster.zookeeper + typo
    assert line == f"error: chroot {typo} does not exist on ZooKeeper {where}; nothing was written"


def test_missing_consumers_under_an_existing_chroot(seeded: Seeded, chroot: str) -> None:
    line = seeded.refused(["get-mode", "-z", seeded.cluster.zookeeper + chroot, "-g", seeded.group], EXIT_NOT_FOUND)
    assert line.startswith(f"error: /consumers does not exist (chroot {chroot})")


@pytest.mark.parametrize(
    "command",
    [
        ["get-mode"],
        ["history"],
        ["status"],
        ["acl", "show"],
        ["set-mode", "kafka"],
        ["offsets", "export", "--store", "zookeeper"],
        ["offsets", "diff"],
        ["offsets", "sync", "--from", "zookeeper", "--to", "kafka", "--execute"],
    ],
    ids=" ".join,
)
def test_missing_group_has_its_own_exit_code(seeded: Seeded, command: list[str]) -> None:
    missing = f"{seeded.group}-typo"
    argv = [*command, "-z", seeded.cluster.zookeeper, "-g", missing]
    assert seeded.refused(argv, EXIT_NOT_FOUND) == f"error: group {missing} does not exist under /consumers"


@pytest.mark.parametrize(
    ("rows", "words"),
    [("nosuch,0,4", "topic nosuch does not exist"), ("{topic},9,4", "has no partition 9 (it has 3)")],
    ids=["unknown topic", "partition out of range"],
)
def test_offsets_import_without_b_is_checked_against_brokers_topics(
    seeded: Seeded, tmp_path: Path, rows: str, words: str
) -> None:
    source = tmp_path / "offsets.csv"
    source.write_text(f"topic,partition,offset\n{seeded.topic},0,9\n{rows.format(topic=seeded.topic)}\n")
    argv = [*seeded.base("offsets", "import"), "--store", "zookeeper", "-i", str(source), "--execute"]
    assert words in seeded.refused(argv, EXIT_REFUSED)


# --- --zk-auth -------------------------------------------------------------------------------------------


def test_zk_auth_without_scheme_names_the_option(seeded: Seeded) -> None:
    line = seeded.refused([*seeded.base("get-mode"), "--zk-auth", "ops:s3cret"], EXIT_REFUSED)
    assert line.startswith("error: --zk-auth: expected one of digest:<user>:<password>")
    assert "s3cret" not in line and "zookeeper.auth" not in line


def test_wrong_password_is_not_told_to_add_zk_auth(seeded: Seeded) -> None:
    assert cli.run(*seeded.base("acl", "protect"), "--admin", "digest:ops:s3cret").code == EXIT_OK
    argv = [*seeded.base("set-mode", "zookeeper", bootstrap=True), "--zk-auth", "digest:ops:wrong", "--force"]
    line = seeded.refused(argv, EXIT_REFUSED)
    assert "connected as digest user 'ops'" in line and "password is wrong" in line
    assert "run with --zk-auth" not in line
    anonymous = seeded.refused([*seeded.base("set-mode", "zookeeper", bootstrap=True), "--force"], EXIT_REFUSED)
    assert "run with --zk-auth digest:<admin user>:<password>" in anonymous


# --- optional extras ---------------------------------------------------------------------------------------


def test_fleet_scan_without_pyspark_names_the_extra(seeded: Seeded, tmp_path: Path) -> None:
    argv = ["fleet-scan", "-z", seeded.cluster.zookeeper]
    line = seeded.refused(argv, EXIT_REFUSED, hide=("pyspark",), tmp=tmp_path)
    assert line == "error: fleet-scan needs the 'spark' extra (pyspark missing): pip install 'migrator[spark]'"


@pytest.mark.slow
def test_demo_without_matplotlib_keeps_its_verdict(cluster: Any, tmp_path: Path) -> None:
    out = tmp_path / "demo"
    argv = ["demo", "--quick", "-z", cluster.zookeeper, "-b", cluster.bootstrap_servers, "-o", str(out)]
    done = cli.run(*argv, hide=("matplotlib",), tmp=tmp_path, timeout=300)
    assert done.code == EXIT_OK, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    hints = [line for line in done.stdout.splitlines() if line.startswith("hint:")]
    assert hints == ["hint: no timeline.png: matplotlib is not installed (pip install 'migrator[plot]')"]
    assert "RESULT: every safety property held" in done.stdout
    assert (out / "report.json").exists() and not (out / "timeline.png").exists()


# --- --wait: a rebalancing group, a timeout's reason, Ctrl-C after the write ------------------------------


def _stalled_member(bootstrap: str, group: str, topic: str, with_: set[str]) -> StalledMember:
    """A plain member that polls until the group is stable with it and `with_`, then stops polling: the next
    rebalance waits for it (up to its max.poll.interval.ms), so the Kafka group stays PREPARING_REBALANCING
    long enough to be seen, then drops it and settles."""
    member = StalledMember(bootstrap, group, topic, "stalled-app", config={"max.poll.interval.ms": STALL_MS})
    admin = KafkaAdmin(bootstrap)

    def stable() -> bool:
        kafka = admin.describe_group(group)
        return kafka.stable and kafka.client_ids == {*with_, "stalled-app"}

    try:
        wait_until(stable, timeout=90, interval=0.2, what="the stalled member in a stable group")
    except AssertionError:
        member.kill()
        raise
    member.stall()
    return member


def test_set_mode_kafka_on_a_rebalancing_group(
    cluster: Any,
    zk_client: KazooClient,
    fake_group: FakeGroup,
) -> None:
    b1 = fake_group.add_bridge(f"{fake_group.group}_b1")
    stalled = _stalled_member(cluster.bootstrap_servers, fake_group.group, fake_group.topic, {b1})
    try:
        b2 = fake_group.add_bridge(f"{fake_group.group}_b2")  # its join starts a rebalance the stalled one holds up
        admin = KafkaAdmin(cluster.bootstrap_servers)
        wait_until(lambda: admin.describe_group(fake_group.group).state.rebalancing, timeout=20)
        argv = ["set-mode", "kafka", "-z", cluster.zookeeper, "-g", fake_group.group]
        before = cli.zk_state(zk_client)

        line = cli.run(*argv).single_error(EXIT_REFUSED)
        assert "it is rebalancing; retry in about 10s, or add --wait" in line
        assert cli.zk_state(zk_client) == before

        with fake_group.following(zk_client, [b1, b2]):
            waited = cli.run(*argv, "--wait", "--timeout", "60")  # settles when the stalled member is dropped
        assert waited.code == EXIT_OK, waited.stderr
        assert "it is rebalancing" not in waited.stderr and "switch complete" in waited.stdout
        assert zk_client.get(fake_group.paths.mode)[0] == b"kafka"
    finally:
        stalled.kill()


def _switching(cluster: Any, zk: KazooClient, fake: FakeGroup, *extra: str) -> tuple[str, subprocess.Popen[str]]:
    """One bridge in a stable group, and `set-mode kafka --wait` running on it, past its write of the mode."""
    b1 = fake.add_bridge(f"{fake.group}_b1")
    fake.wait_kafka_members({b1})
    proc = cli.start("set-mode", "kafka", "-z", cluster.zookeeper, "-g", fake.group, "--wait", *extra)
    wait_until(lambda: zk.exists(fake.paths.mode) is not None, timeout=30, what="set-mode to write the mode")
    return b1, proc


def test_wait_timeout_names_the_reason_a_bridge_published(
    cluster: Any,
    zk_client: KazooClient,
    fake_group: FakeGroup,
) -> None:
    from migrator.protocol.codecs import Authority, PublishedAuthority

    why = "legacy connector(s) registered: g_old"
    b1, proc = _switching(cluster, zk_client, fake_group, "--timeout", "5")
    refusal = PublishedAuthority(Authority.ZOOKEEPER, 2, int(time.time() * 1000), reason=why)
    zk_client.create(fake_group.paths.published_authority(b1), refusal.encode(), makepath=True, ephemeral=True)
    out, err = proc.communicate(timeout=60)
    line = cli.CliRun(proc.returncode, out, err).single_error(EXIT_FAILED)
    assert f"bridge {b1} published zookeeper after the write: {why}" in line


def test_ctrl_c_during_wait_after_the_write_says_how_to_roll_back(
    cluster: Any,
    zk_client: KazooClient,
    fake_group: FakeGroup,
) -> None:
    _, proc = _switching(cluster, zk_client, fake_group)
    time.sleep(0.5)  # inside the wait loop
    line = cli.interrupt(proc).single_error(EXIT_INTERRUPTED)
    assert f"the mode of {fake_group.group} IS written (kafka" in line
    assert f"migrator set-mode zookeeper -z {cluster.zookeeper} -g {fake_group.group}" in line
    assert zk_client.get(fake_group.paths.mode)[0] == b"kafka"


def _interrupt_when_written(zk: KazooClient, path: str, value: str, proc: subprocess.Popen[str]) -> threading.Event:
    """SIGINT to `proc` from the watch that sees `path` hold `value`; the event says it was sent."""
    sent = threading.Event()

    def on_data(data: bytes | None, _stat: Any, _event: Any = None) -> bool:
        if data == value.encode() and not sent.is_set():
            proc.send_signal(signal.SIGINT)
            sent.set()
        return not sent.is_set()  # False ends the watch

    DataWatch(zk, path, on_data)
    return sent


def test_ctrl_c_racing_the_write_still_says_the_mode_is_written(
    cluster: Any,
    zk_client: KazooClient,
    fake_group: FakeGroup,
) -> None:
    """Ctrl-C sent the moment the mode node changes, i.e. while the command waits for its write's reply or
    just after: every round it says the mode IS written and how to roll back, never a bare `interrupted`
    (which left an operator guessing whether the switch happened)."""
    b1 = fake_group.add_bridge(f"{fake_group.group}_b1")
    fake_group.wait_kafka_members({b1})
    for target in ("kafka", "zookeeper") * 3:
        proc = cli.start("set-mode", target, "-z", cluster.zookeeper, "-g", fake_group.group, "--wait")
        sent = _interrupt_when_written(zk_client, fake_group.paths.mode, target, proc)
        out, err = proc.communicate(timeout=60)
        assert sent.is_set(), f"the mode was never written: {err}"
        line = cli.CliRun(proc.returncode, out, err).single_error(EXIT_INTERRUPTED)
        assert f"the mode of {fake_group.group} IS written ({target}" in line
        assert zk_client.get(fake_group.paths.mode)[0] == target.encode()


@contextlib.contextmanager
def _ctrl_c_at(code: types.CodeType, source: str) -> Iterator[list[int]]:
    """A real SIGINT raised on this thread when it reaches the line of `code` whose text is `source`: a
    Ctrl-C landing there, every time. Yields the line number (empty if never reached)."""
    first = code.co_firstlineno
    lines, _ = inspect.getsourcelines(code)
    target = next(first + i for i, text in enumerate(lines) if text.strip() == source)
    hit: list[int] = []

    def local(frame: types.FrameType, event: str, _arg: object) -> Any:
        if event == "line" and frame.f_lineno == target and not hit:
            hit.append(target)
            signal.raise_signal(signal.SIGINT)
        return local

    def global_(frame: types.FrameType, _event: str, _arg: object) -> Any:
        return local if frame.f_code is code else None

    sys.settrace(global_)
    try:
        yield hit
    finally:
        sys.settrace(None)


def test_ctrl_c_inside_a_zookeeper_request_is_an_interrupt_not_a_lost_connection(
    cluster: Any, unique_group: str
) -> None:
    """kazoo wakes its connection thread inside a bare `except:` (`KazooClient._call`), so a Ctrl-C landing
    there was swallowed and became ConnectionClosedError: the command said "lost the ZooKeeper connection"
    (exit 1) after waiting 30 s for replies, and `set-mode --wait` never said the mode IS written. The
    commands' SIGINT handler holds the signal and sends it again once the request is queued: a prompt
    KeyboardInterrupt."""
    from kazoo.client import KazooClient

    from migrator.cli import interrupts
    from migrator.cli.common import Connection, zookeeper
    from migrator.zk.group_reader import read_group

    conn = Connection(cluster.zookeeper, None, None, connect_timeout_s=10.0)
    previous = signal.getsignal(signal.SIGINT)
    interrupts.install_interrupt_handler()
    try:
        t0 = time.monotonic()
        with (
            pytest.raises(KeyboardInterrupt),
            zookeeper(conn) as zk,
            _ctrl_c_at(inspect.unwrap(KazooClient._call).__code__, 'write_sock.send(b"\\0")') as hit,
        ):
            while True:  # as the `--wait` loop: reads until Ctrl-C
                read_group(zk, unique_group)
        assert hit, "kazoo's _call no longer has the wake-up line this test aims at"
        assert time.monotonic() - t0 < 5, "the client was left waiting for replies"
    finally:
        signal.signal(signal.SIGINT, previous)


# --- fleet-scan --apply / --rollback follow set-mode's rule -------------------------------------------------


def _switched_plan(ensemble: str, group: str, path: Path) -> Path:
    from migrator.fleet.plan import Outcome, Plan, PlanEntry

    plan = Plan(run_id="r1", holder="test", dry_run=False, started_at_ms=1)
    plan.groups.append(
        PlanEntry(ensemble, group, 1, previous_mode=None, previous_mode_exists=False, outcome=Outcome.SWITCHED)
    )
    plan.save(path)
    return path


@pytest.mark.parametrize("how", ["--apply", "--rollback"])
def test_fleet_scan_refuses_to_switch_where_kafka_cannot_be_found(
    cluster: Any, zk_client: KazooClient, chroot: str, tmp_path: Path, how: str
) -> None:
    ensemble = cluster.zookeeper + chroot
    group = "orders"
    zk_client.create(chroot + GroupPaths(group).mode, b"kafka", makepath=True)
    argv = ["fleet-scan", "-z", ensemble, "--no-progress", "--plan-file", str(tmp_path / "plan.json")]
    argv += ["--apply"] if how == "--apply" else ["--rollback", str(_switched_plan(ensemble, group, tmp_path / "p"))]
    before = cli.zk_state(zk_client)
    line = cli.run(*argv).single_error(EXIT_REFUSED)
    assert f"no bridge that published its brokers for {ensemble}" in line
    assert cli.zk_state(zk_client) == before


# --- status names the partitions a plain consumer also holds ------------------------------------------------


def test_status_names_the_partitions_a_plain_consumer_also_holds(
    cluster: Any,
    zk_client: KazooClient,
    fake_group: FakeGroup,
) -> None:
    bridge = fake_group.add_bridge_and_plain()
    for partition in range(PARTITIONS):  # the bridge, under zookeeper authority, claims every partition
        zk_client.create(fake_group.paths.owner(fake_group.topic, partition), f"{bridge}-0".encode(), makepath=True)
    held = KafkaAdmin(cluster.bootstrap_servers).describe_group(fake_group.group).assignment_by_client()["plain-app"]
    assert held, "range gives the plain consumer at least one of 3 partitions"

    done = cli.run("status", "-z", cluster.zookeeper, "-g", fake_group.group)

    assert done.code == EXIT_FAILED, done.stderr  # dual ownership is an error finding
    assert done.stdout.startswith(f"group {fake_group.group}: ERR: ")
    warning = next(line for line in done.stdout.splitlines() if "dual ownership" in line)
    assert f"dual ownership on {len(held)} partitions" in warning
    for tp in held:
        assert f"{tp} (plain-app)" in warning
        row = next(line for line in done.stdout.splitlines() if line.strip().startswith(f"{tp} "))
        assert f"{bridge}-0 + kafka:plain-app" in row
