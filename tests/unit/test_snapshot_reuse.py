"""When a rebalance may reuse the last snapshot, re-reading at most the mode node (`snapshot.refreshable`)."""

from __future__ import annotations

import pytest

from migrator.zk.codecs import ModeNode, Registration
from migrator.zk.snapshot import Snapshot, refreshable


def _snapshot(problems: tuple[str, ...] = (), watched: bool = True) -> Snapshot:
    reg = Registration(subscription={"t": 1})
    subscriptions = {"c1": {"t": 1}}
    mode = ModeNode.absent()
    return Snapshot({"c1": reg}, frozenset({"c1"}), mode, subscriptions, {"t": (0, 1)}, problems, (), watched)


def test_a_mode_change_alone_reuses_the_last_snapshot() -> None:
    assert refreshable({"mode"}, _snapshot())


@pytest.mark.parametrize(
    "reasons",
    [{"mode", "ids"}, {"migration ids"}, {"mode", "topic t"}, {"topics"}, {"start"}, {"new session"},
     {"retry"}, {"mode", "retry"}, {"kafka assignment", "ids"}, {"kafka assignment", "retry"},
     {"kafka unavailable"}, {"kafka assignment", "kafka unavailable"}, set()],
)  # fmt: skip
def test_any_other_change_or_retry_reads_everything(reasons: set[str]) -> None:
    assert not refreshable(reasons, _snapshot())


@pytest.mark.parametrize("reasons", [{"kafka assignment"}, {"mode", "kafka assignment"}])
def test_a_kafka_assignment_reuses_a_snapshot_read_wholly_from_watched_nodes(reasons: set[str]) -> None:
    assert refreshable(reasons, _snapshot())
    assert not refreshable(reasons, _snapshot(watched=False))  # partitions from the brokers: read again


def test_nothing_to_reuse_without_a_usable_snapshot() -> None:
    assert not refreshable({"mode"}, None)
    assert not refreshable({"mode"}, _snapshot(problems=("malformed ids node c2: not json",)))
