"""The drop-in pykafka API (`migrator.pykafka`) driven as a user does: one pykafka application
(`tests/peers/pykafka_app.py`) runs once with real pykafka 2.8.0 and once with its imports changed to
`migrator.pykafka`, both in their own processes and in the same group. The observer judges what they processed.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from migrator.assign.pykafka import ASSIGNORS, PykafkaProtocol
from migrator.observe import duplicates, load_many, lost, overlaps
from migrator.protocol.pykafka_layout import OwnerNode, Spelling, decode_owner, topic_text
from migrator.zk.brokers import partition_leaders
from tests.helpers import cli
from tests.helpers.kafka import make_topic, produce
from tests.helpers.pykafka_peer import PEERS, ROOT, pykafka_python
from tests.helpers.wait import wait_until

PARTITIONS = 12
APP = PEERS / "pykafka_app.py"


CLIENT_CALL = "KafkaClient(hosts=args.bootstrap,"
BRIDGE_CALL = 'KafkaClient(properties={"coordination.migration.enabled": "true"}, hosts=args.bootstrap,'


def swapped_app(tmp: Path, bridge: bool) -> Path:
    """The application with `pykafka` changed to `migrator.pykafka` in its imports; for a bridge, also the
    one call that makes its client (the properties pykafka has no argument for)."""
    source = APP.read_text()
    swapped = source.replace("from pykafka", "from migrator.pykafka")
    assert swapped.count("from migrator.pykafka") == 3 and "import pykafka" not in swapped
    if bridge:
        assert swapped.count(CLIENT_CALL) == 1
        swapped = swapped.replace(CLIENT_CALL, BRIDGE_CALL)
    path = tmp / f"pykafka_app_on_migrator{'_bridge' if bridge else ''}.py"
    path.write_text(swapped)
    return path


class App:
    """One run of the application: `python app.py ...` in its own process, stderr in `<log>.stderr`."""

    def __init__(self, python: Path, script: Path, cluster: Any, group: str, topic: str, log: Path) -> None:
        self.log = log
        cmd = [str(python), str(script), "--zookeeper", cluster.zookeeper, "--bootstrap", cluster.bootstrap_servers,
               "--group", group, "--topic", topic, "--log", str(log)]  # fmt: skip
        with open(log.with_suffix(".stderr"), "w", encoding="utf-8") as err:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True)
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()
        assert first.strip() == "ready", f"{script.name} did not start: {first!r}; {self.stderr()}"

    def stderr(self) -> str:
        return " | ".join(self.log.with_suffix(".stderr").read_text(errors="replace").strip().splitlines()[-5:])

    def stop(self) -> dict[int, int]:
        """SIGTERM; the held offsets it printed when it stopped (exit 0 required)."""
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, f"exit {self.proc.returncode}: {self.stderr()}"
        last = out.strip().splitlines()[-1]
        assert last.startswith("stopped "), out
        return {int(p): o for p, o in json.loads(last.removeprefix("stopped ")).items()}

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def owners(zk: KazooClient, group: str, topic: str) -> dict[int, str]:
    """partition -> owner of the pykafka owner nodes (a node released meanwhile is skipped)."""
    base = f"/consumers/{group}/owners/{topic_text(topic, Spelling.PYTHON3)}"
    found: dict[int, str] = {}
    with contextlib.suppress(NoNodeError):
        for name in zk.get_children(base):
            node = OwnerNode.parse(name)
            with contextlib.suppress(NoNodeError):
                data = zk.get(f"{base}/{name}")[0]
                if node is not None:
                    found[node.partition] = decode_owner(data)
    return found


@pytest.mark.parametrize("bridge", [False, True], ids=["legacy", "bridge"])
def test_a_pykafka_app_with_its_imports_swapped_joins_the_group_of_the_same_app_on_real_pykafka(
    cluster: Any, zk_client: KazooClient, unique_group: str, unique_topic: str, tmp_path: Path, bridge: bool
) -> None:
    """Real pykafka alone, then the swapped app joins (both converge on pykafka's assignment), then real pykafka
    leaves and the swapped app takes every partition, resuming where pykafka committed; as a bridge, it then
    follows `migrator set-mode kafka`. Nothing is lost, nothing processed twice or by two members at once; the
    swapped app's `held_offsets` are its last records."""
    make_topic(cluster, unique_topic, partitions=PARTITIONS)
    group, topic = unique_group, unique_topic
    produced: list[tuple[str, int, int]] = []

    def produce_batch(batch: int) -> None:
        for p in range(PARTITIONS):
            produce(cluster, topic, [f"{p}-{batch}-{i}".encode() for i in range(3)], partition=p)
            produced.extend((topic, p, 3 * batch + i) for i in range(3))

    logs = [tmp_path / "pykafka.jsonl", tmp_path / "migrator.jsonl"]

    def all_processed() -> bool:
        return not lost(produced, load_many([log for log in logs if log.exists()]))

    real = App(pykafka_python(), APP, cluster, group, topic, logs[0])
    ours: App | None = None
    try:
        produce_batch(0)
        wait_until(all_processed, 60, what="real pykafka alone processes the first batch")
        ours = App(Path(sys.executable), swapped_app(tmp_path, bridge), cluster, group, topic, logs[1])
        wait_until(lambda: len(zk_client.get_children(f"/consumers/{group}/ids")) == 2, 30, what="two members")
        ids = sorted(zk_client.get_children(f"/consumers/{group}/ids"))
        both = ASSIGNORS[PykafkaProtocol.RANGE](topic, Spelling.PYTHON3, ids, partition_leaders(zk_client, topic))
        wait_until(lambda: owners(zk_client, group, topic) == both, 60, what=f"owners {both}")
        produce_batch(1)
        wait_until(all_processed, 60, what="both process the second batch")
        real.stop()
        wait_until(lambda: len(set(owners(zk_client, group, topic).values())) == 1, 60, what="one owner left")
        if bridge:
            switch = cli.run("set-mode", "kafka", "-g", group, "-z", cluster.zookeeper, "-b", cluster.bootstrap_servers,
                             "--reason", "drop-in bridge", "--wait")  # fmt: skip
            assert switch.code == 0, switch
        produce_batch(2)
        wait_until(all_processed, 60, what="the swapped app processes the third batch")
        held = ours.stop()
    finally:
        real.kill()
        if ours is not None:
            ours.kill()
    records = load_many(logs)
    assert not overlaps(records), overlaps(records)[:3]
    assert not duplicates(records), duplicates(records)[:3]
    mine = load_many([logs[1]])
    assert {r.partition for r in mine} == set(range(PARTITIONS))
    assert held == {p: max(r.offset for r in mine if r.partition == p) for p in range(PARTITIONS)}
