"""The retirement verdict: pure over the scan's rows and the ensemble's sessions; and the parsers of `cons`/`dump`."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from migrator.fleet.model import FleetRow, Status
from migrator.fleet.readiness import (
    READY_LINE,
    EnsembleUse,
    Stage,
    Step,
    cleaned_count,
    ensemble_use,
    readiness,
    to_doc,
    to_text,
)
from migrator.zk.usage import parse_cons, parse_dump, servers

ZK = "zk1:2181,zk2:2181/kafka"


def row(group: str, status: Status, members: int = 1, mode: str | None = None, ensemble: str = ZK) -> FleetRow:
    return FleetRow(ensemble, group, status.value, [], members=members, mode=mode)


def test_an_empty_ensemble_with_no_session_under_consumers_is_ready():
    result = readiness(ZK, [], EnsembleUse(consumers_sessions=(), other_clients=(), brokers=3))
    assert result.ready and result.verdict == READY_LINE
    assert READY_LINE in to_text(result) and to_doc(result)["ready"] is True


def test_each_stage_is_counted_and_blocks_with_its_command():
    rows = [
        row("legacy", Status.LEGACY),
        row("ready", Status.READY),
        row("bridged", Status.KAFKA, members=2, mode="kafka"),
        row("done", Status.KAFKA, members=0, mode="kafka"),
        row("stuck", Status.BLOCKED, mode="kafka"),
        row("other-ensemble", Status.LEGACY, ensemble="elsewhere:2181"),
    ]
    result = readiness(ZK, rows, EnsembleUse())
    assert result.counts[Stage.ZOOKEEPER] == 2 and result.counts[Stage.MIGRATING] == 2
    assert result.counts[Stage.FINISHED] == 1 and result.counts[Stage.CLEANED] == 0
    commands = {b.step: b.command(ZK) for b in result.blockers}
    assert commands[Step.CLEANUP] == f"migrator cleanup -z {ZK} -g done --execute"
    assert commands[Step.SWITCH] == f"migrator set-mode kafka -z {ZK} -g ready"
    assert commands[Step.CUTOVER] == f"migrator cutover -z {ZK} -g legacy"
    assert not result.ready


def test_sessions_under_consumers_block_but_brokers_and_other_clients_are_only_reported():
    use = ensemble_use(
        "/kafka",
        clients={1: "10.0.0.1:5000", 2: "10.0.0.2:5000", 3: "10.0.0.3:5000"},
        ephemerals={1: ("/brokers/ids/0",), 2: ("/kafka/consumers/g/ids/c1", "/other/consumers/h/ids/c")},
        brokers={"0": 1},
        own_sessions=[3, None],
    )
    assert use.other_clients == ("10.0.0.2:5000",) and use.brokers == 1
    assert use.consumers_sessions == ("0x2: 1 ephemeral nodes in g",)
    result = readiness("zk1:2181/kafka", [], use)
    assert [b.step for b in result.blockers] == [Step.STOP_SESSIONS]
    assert result.blockers[0].command("zk1:2181/kafka").startswith("echo dump | nc zk1 2181")
    clients_only = readiness("zk1:2181/kafka", [], EnsembleUse((), ("10.0.0.2:5000",), brokers=1))
    assert clients_only.ready


def test_groups_left_out_by_a_filter_block_the_verdict():
    result = readiness(ZK, [], EnsembleUse(unscanned_groups=4))
    assert [b.step for b in result.blockers] == [Step.SCAN_ALL]


_statuses = st.sampled_from(Status)
_rows = st.lists(
    st.builds(row, st.text(min_size=1, max_size=6), _statuses, st.integers(0, 3), st.sampled_from([None, "kafka"])),
    max_size=20,
)
_use = st.builds(EnsembleUse, st.none() | st.lists(st.text(max_size=4), max_size=2).map(tuple))


@given(_rows, _use)
def test_ready_exactly_when_no_group_and_no_session_under_consumers_remains(rows, use):
    result = readiness(ZK, rows, use)
    assert result.ready == (not rows and not use.consumers_sessions)
    assert sum(n for stage, n in result.counts.items() if stage is not Stage.CLEANED) == len(rows)
    assert sorted(g for b in result.blockers if b.step not in (Step.STOP_SESSIONS,) for g in b.items) == sorted(
        r.group for r in rows
    )
    assert (READY_LINE in to_text(result)) == result.ready


CONS = """ /127.0.0.1:50504[1](queued=0,recved=5,sent=5,sid=0x1000038a8d70001,lop=PING,est=1,to=30000,lcxid=0x1)
 /127.0.0.1:50510[0](queued=0,recved=1,sent=0)
"""
DUMP = """SessionTracker dump:
Global Sessions(1):
0x1000038a8d70000\t6000ms
ephemeral nodes dump:
Sessions with Ephemerals (2):
0x1000038a8d70000:
\t/brokers/ids/0
\t/controller
0x1000038a8d70001:
\t/consumers/g/ids/c1
Connections with Ephemerals (0):
"""


def test_cons_and_dump_answers_are_parsed():
    assert parse_cons(CONS) == {0x1000038A8D70001: "127.0.0.1:50504"}
    assert parse_dump(DUMP) == {
        0x1000038A8D70000: ("/brokers/ids/0", "/controller"),
        0x1000038A8D70001: ("/consumers/g/ids/c1",),
    }
    assert servers("a:1,[::1]:2,b/chroot") == [("a", 1), ("::1", 2), ("b", 2181)]


def test_cleaned_are_the_archived_groups_of_this_ensemble_that_are_gone():
    archived = [(ZK, "gone"), (ZK, "back"), ("other:2181", "elsewhere"), (ZK, "gone")]
    assert cleaned_count(archived, ZK, present=["back", "live"]) == 1
    result = readiness(ZK, [], EnsembleUse((), (), cleaned=1))
    assert result.counts[Stage.CLEANED] == 1 and result.ready
