"""When a rebalance may reuse the last snapshot and re-read only the mode node (`snapshot.refreshable`)."""

from __future__ import annotations

import pytest

from migrator.protocol.codecs import ModeNode, Registration
from migrator.zk.snapshot import Snapshot, refreshable


def _snapshot(problems: tuple[str, ...] = ()) -> Snapshot:
    reg = Registration(subscription={"t": 1})
    return Snapshot({"c1": reg}, frozenset({"c1"}), ModeNode.absent(), {"c1": {"t": 1}}, {"t": (0, 1)}, problems)


def test_a_mode_change_alone_reuses_the_last_snapshot() -> None:
    assert refreshable({"mode"}, _snapshot())


@pytest.mark.parametrize(
    "reasons",
    [{"mode", "ids"}, {"migration ids"}, {"mode", "topic t"}, {"topics"}, {"start"}, {"new session"},
     {"retry"}, {"mode", "retry"}, {"kafka assignment"}, {"mode", "kafka assignment"}, {"kafka unavailable"},
     set()],
)  # fmt: skip
def test_any_other_change_or_retry_reads_everything(reasons: set[str]) -> None:
    assert not refreshable(reasons, _snapshot())


def test_nothing_to_reuse_without_a_usable_snapshot() -> None:
    assert not refreshable({"mode"}, None)
    assert not refreshable({"mode"}, _snapshot(problems=("malformed ids node c2: not json",)))
