"""Use of a connector after `os.fork()` (docs/application.md, "fork and multiprocessing"): an app in its own
process forks while consuming; the child's calls raise `UsedAfterFork` at once, the parent goes on."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from migrator.observe import judge, load_many
from tests.apps.run import App, apps_fixture, start  # noqa: F401 - the `apps` fixture
from tests.helpers.kafka import make_topic, produce
from tests.helpers.wait import wait_until

pytestmark = pytest.mark.integration


def test_a_forked_child_gets_a_clear_error_at_once_and_the_parent_goes_on(
    cluster, unique_group, unique_topic, tmp_path: Path, apps: list[App]
) -> None:
    topic = make_topic(cluster, unique_topic, partitions=1)
    produced = {(topic, 0, o) for o in range(20)}
    produce(cluster, topic, (f"v{o}" for o in range(20)))
    log = tmp_path / "parent.jsonl"
    app = start(apps, "fork_child.py", cluster.zookeeper, unique_group, topic, "a", log)
    wait_until(lambda: app.line("forked") or app.proc.poll() is not None, 60, what="the child's report")
    child = {line.split()[1]: line.split()[2:] for line in app.lines if line.startswith("child ")}
    print(f"\nforked child: {child}")
    assert {call: outcome for call, (outcome, _) in child.items()} == dict.fromkeys(
        ("shutdown", "commit", "iterate"), "UsedAfterFork"
    ), app.stderr
    assert max(float(took) for _, took in child.values()) < 2.0, child
    assert app.line("forked") == "forked 0"
    wait_until(lambda: produced <= {r.key for r in load_many([log])}, 30, what="the parent consuming on")
    app.signal(signal.SIGTERM)
    assert app.wait(30) == 0, app.stderr
    assert "UsedAfterFork" not in app.stderr and "unreachable" not in app.stderr, app.stderr
    assert judge(produced, load_many([log])).ok
