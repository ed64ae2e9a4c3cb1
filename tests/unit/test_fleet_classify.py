"""The fleet scan's classification rules, over hand-built GroupViews (no cluster)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from migrator.fleet.classify import classify, convergence_problems, group_lag, reason_code, to_row
from migrator.fleet.model import KafkaGroupFacts, Status
from migrator.protocol.codecs import Authority, ModeNode, PublishedAuthority, Registration
from migrator.protocol.group_view import CorruptMember, GroupView, Member
from migrator.protocol.kafka import KafkaGroup, KafkaGroupState, KafkaMember
from migrator.protocol.partition import TopicPartition as TP

NOW = 10_000_000
HOUR = 3_600_000
TOPIC = "orders"


def member(cid: str, bridge: bool = True, ctime: int = NOW - 2 * HOUR, topic: str = TOPIC) -> Member:
    return Member(cid, Registration({topic: 1}, timestamp_ms=ctime), ctime, bridge)


def authority(value: Authority = Authority.ZOOKEEPER, generation: int = 3) -> PublishedAuthority:
    return PublishedAuthority(value, generation=generation, timestamp_ms=NOW - HOUR, kafka_member_id="m")


def ready_view(**changes) -> GroupView:
    """Two bridges, both publishing zookeeper, owning both partitions, offsets in ZooKeeper."""
    members = (member("g_a"), member("g_b"))
    view = GroupView(
        group="g",
        members=members,
        migration_ids=frozenset({"g_a", "g_b"}),
        authorities={"g_a": authority(), "g_b": authority()},
        owners={TP(TOPIC, 0): "g_a-0", TP(TOPIC, 1): "g_b-0"},
        offsets={TP(TOPIC, 0): 5, TP(TOPIC, 1): 7},
    )
    return replace(view, **changes)


def kafka_facts(client_ids=("g_a", "g_b"), state="STABLE", assignor="range", **changes) -> KafkaGroupFacts:
    members = tuple(
        KafkaMember(f"m-{cid}", cid, "/127.0.0.1", None, (TP(TOPIC, i),)) for i, cid in enumerate(client_ids)
    )
    facts = KafkaGroupFacts(
        group=KafkaGroup("g", KafkaGroupState.from_name(state), assignor, members),
        committed={TP(TOPIC, 0): 5, TP(TOPIC, 1): 7},
        log_end={TP(TOPIC, 0): 10, TP(TOPIC, 1): 10},
        partitions={TOPIC: (0, 1)},
    )
    return replace(facts, **changes)


def run(view: GroupView, kafka: KafkaGroupFacts | None = None, stable_ms: int = HOUR, max_size: int | None = None):
    return classify(view, kafka, NOW, stable_ms, max_size)


def codes(c) -> set[str]:
    return {reason_code(r) for r in c.reasons}


def test_ready_when_all_bridges_stable_in_kafka_and_consistent():
    c = run(ready_view(), kafka_facts())
    assert c.status is Status.READY, c.reasons
    assert c.reasons == ()


def test_legacy_and_migrating():
    legacy = ready_view(members=(member("g_a", bridge=False), member("g_b", bridge=False)), migration_ids=frozenset())
    assert run(legacy, kafka_facts(client_ids=())).status is Status.LEGACY
    mixed = ready_view(members=(member("g_a"), member("g_b", bridge=False)), migration_ids=frozenset({"g_a"}))
    c = run(mixed, kafka_facts(client_ids=("g_a",)))
    assert c.status is Status.MIGRATING
    assert "legacy-members" in codes(c)


def test_legacy_member_blocks_even_when_mode_is_kafka():
    mixed = ready_view(members=(member("g_a"), member("g_b", bridge=False)), mode=ModeNode.decode(b"kafka"))
    assert run(mixed, kafka_facts(client_ids=("g_a",))).status is Status.MIGRATING


@pytest.mark.parametrize(
    ("view_changes", "facts_changes", "expected_code"),
    [
        ({"members": (member("g_a"), member("g_b", ctime=NOW - 1000))}, {}, "not-stable"),
        ({"mode": ModeNode.decode(b"zookeeper"), "mode_mtime_ms": NOW - 5}, {}, "not-stable"),
        ({}, {"client_ids": ("g_a",)}, "not-in-kafka-group"),
        ({}, {"state": "PREPARING_REBALANCING"}, "kafka-rebalancing"),
        ({"authorities": {"g_a": authority()}}, {}, "no-authority-published"),
        ({"authorities": {"g_a": authority(), "g_b": authority(Authority.KAFKA)}}, {}, "authority-not-zookeeper"),
        ({"offsets": {TP(TOPIC, 0): 50, TP(TOPIC, 1): 7}}, {}, "offset-beyond-log-end"),
        ({"offsets": {}}, {"committed": {TP(TOPIC, 0): 11}}, "offset-beyond-log-end"),
        ({}, {"committed": {TP(TOPIC, 1): 7}}, "kafka-offset-missing"),
        ({"mode": ModeNode.decode(b"kafak")}, {}, "unknown-mode"),
        ({"corrupt_members": (CorruptMember("g_c", "empty ids node"),)}, {}, "corrupt-member"),
        ({}, {"assignor": "sticky"}, "preflight"),
        ({"owners": {TP(TOPIC, 0): "g_a-0"}}, {}, "unowned-partitions"),
    ],
)
def test_blocked_reasons(view_changes, facts_changes, expected_code):
    facts_args = {k: facts_changes.pop(k) for k in ("client_ids", "state", "assignor") if k in facts_changes}
    c = run(ready_view(**view_changes), kafka_facts(**facts_args, **facts_changes))
    assert c.status is Status.BLOCKED
    assert expected_code in codes(c), c.reasons


def test_ready_needs_kafka_facts():
    assert codes(run(ready_view(), None)) == {"kafka-unchecked"}
    broken = KafkaGroupFacts(group=None, error="timed out")
    c = run(ready_view(), broken)
    assert c.status is Status.BLOCKED and "kafka-unavailable" in codes(c)


def test_group_max_size():
    assert run(ready_view(), kafka_facts(), max_size=2).status is Status.READY
    c = run(ready_view(), kafka_facts(), max_size=1)
    assert c.status is Status.BLOCKED and "group-too-large" in codes(c)


def test_stable_for_zero_accepts_a_fresh_group():
    fresh = ready_view(members=(member("g_a", ctime=NOW), member("g_b", ctime=NOW)))
    assert run(fresh, kafka_facts(), stable_ms=0).status is Status.READY
    assert run(fresh, kafka_facts(), stable_ms=1000).status is Status.BLOCKED


def test_kafka_converged_and_not():
    kafka_auth = {"g_a": authority(Authority.KAFKA), "g_b": authority(Authority.KAFKA)}
    switched = ready_view(mode=ModeNode.decode(b"kafka"), authorities=kafka_auth)
    c = run(switched, kafka_facts())
    assert c.status is Status.KAFKA, c.reasons
    half = ready_view(mode=ModeNode.decode(b"kafka"), authorities={**kafka_auth, "g_b": authority()})
    c = run(half, kafka_facts())
    assert c.status is Status.BLOCKED
    assert any("authority-not-kafka" in r for r in c.reasons)
    unowned = replace(switched, owners={TP(TOPIC, 0): "g_a-0"})
    assert any("unowned-partitions" in r for r in run(unowned, kafka_facts()).reasons)


def test_plain_kafka_consumers():
    c = run(ready_view(), kafka_facts(client_ids=("g_a", "g_b", "rdkafka")))
    assert c.status is Status.MIXED_KAFKA_CONSUMERS
    assert "double-ownership-risk" in codes(c)
    kafka_mode = ready_view(mode=ModeNode.decode(b"kafka"))
    c = run(kafka_mode, kafka_facts(client_ids=("g_a", "g_b", "rdkafka")))
    assert c.status is Status.MIXED_KAFKA_CONSUMERS and "canary" in codes(c)


def test_orphaned_inconsistent_and_kafka_only():
    empty = GroupView(group="g", offsets={TP(TOPIC, 0): 3})
    assert run(empty, None).status is Status.ORPHANED
    assert run(GroupView(group="g", exists=False), None).status is Status.ORPHANED
    only_kafka = run(empty, kafka_facts(client_ids=("rdkafka",)))
    assert only_kafka.status is Status.KAFKA and "kafka-consumers-only" in codes(only_kafka)
    stale = ready_view(owners={TP(TOPIC, 0): "g_a-0", TP(TOPIC, 1): "g_gone-0"})
    c = run(stale, kafka_facts())
    assert c.status is Status.INCONSISTENT and "stale-owner" in codes(c)


def test_lag_uses_the_larger_offset():
    view = ready_view(offsets={TP(TOPIC, 0): 8, TP(TOPIC, 1): 2})
    assert group_lag(view, kafka_facts()) == (10 - 8) + (10 - 7)
    assert group_lag(view, None) is None
    assert group_lag(ready_view(offsets={}), kafka_facts(committed={})) is None  # nothing committed: as in status


def test_lag_without_any_committed_offset_is_unknown_not_zero():
    view = ready_view(offsets={})
    assert group_lag(view, kafka_facts(committed={})) is None


def test_convergence_needs_a_rebalance_after_the_switch():
    kafka_auth = {"g_a": authority(Authority.KAFKA, 4), "g_b": authority(Authority.KAFKA, 3)}
    view = ready_view(mode=ModeNode.decode(b"kafka"), authorities=kafka_auth)
    problems = convergence_problems(view, kafka_facts(), {"g_a": 3, "g_b": 3})
    assert [reason_code(p) for p in problems] == ["no-rebalance-since-switch"]
    kafka_auth["g_b"] = authority(Authority.KAFKA, 4)
    view = replace(view, authorities=kafka_auth)
    assert convergence_problems(view, kafka_facts(), {"g_a": 3, "g_b": 3}) == []
    back = replace(view, mode=ModeNode.decode(b"zookeeper"))
    assert "mode-changed" in {reason_code(p) for p in convergence_problems(back, kafka_facts(), {})}


def test_row_is_flat():
    view = ready_view()
    row = to_row("zk1", view, kafka_facts(), run(view, kafka_facts()), NOW)
    assert (row.status, row.members, row.bridges, row.legacy, row.partitions, row.owned) == ("READY", 2, 2, 0, 2, 2)
    assert row.kafka_members == 2 and row.lag == 8 and row.mode is None


def test_a_layout_neither_dialect_reads_is_marked_and_never_ready() -> None:
    from migrator.fleet.classify import dialect_name, with_layout
    from migrator.fleet.model import Classification, Status
    from migrator.protocol.dialect import Dialect
    from migrator.protocol.layout_dialect import LayoutEvidence, Recognition, Refusal, recognise

    ready = Classification(Status.READY, ())
    unreadable = recognise(LayoutEvidence({"c-1": b"{broken"}, {}))
    assert unreadable.refusal is Refusal.UNREADABLE and dialect_name(unreadable) == "unreadable"
    marked = with_layout(ready, unreadable)
    assert marked.status is Status.BLOCKED and marked.reasons[0].startswith("layout-unreadable: ids/c-1")
    legacy = Classification(Status.LEGACY, ("legacy-members: 1 of 1 are not bridges",))
    assert with_layout(legacy, unreadable).status is Status.LEGACY
    assert with_layout(ready, Recognition(dialect=Dialect.SCALA)) == ready
    assert dialect_name(recognise(LayoutEvidence({"p-1": b"orders"}, {}))) == "pykafka"
    assert dialect_name(Recognition()) is None
