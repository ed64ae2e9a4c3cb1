"""The status report builder: warnings in words, from pure inputs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from migrator.ops.status import (
    FindingKind,
    KafkaNotChecked,
    NotChecked,
    Severity,
    Verdict,
    build_report,
    error_line,
    expected_authority,
    render_text,
)
from migrator.protocol.codecs import Authority, ModeNode, PublishedAuthority, Registration
from migrator.protocol.fetch import FetchHealth, FetchState
from migrator.protocol.group_view import CorruptMember, GroupView, Member
from migrator.protocol.kafka import KafkaGroup, KafkaGroupState, KafkaMember
from migrator.protocol.partition import TopicPartition

T = "t"
TP0, TP1, TP2, TP3 = (TopicPartition(T, p) for p in range(4))
PARTS = {T: (0, 1, 2, 3)}
NOW = 1_000_000


def member(cid: str, bridge: bool = True) -> Member:
    return Member(cid, Registration({T: 1}, timestamp_ms=1), ctime_ms=0, is_bridge=bridge)


def published(authority: Authority, generation: int = 3, age_ms: int = 2000) -> PublishedAuthority:
    return PublishedAuthority(authority, generation, NOW - age_ms)


def view(*members: Member, mode: str | None = None, **kw: object) -> GroupView:
    return GroupView(
        group="g",
        members=members,
        migration_ids=frozenset(m.consumer_id for m in members if m.is_bridge),
        mode=ModeNode(True, mode) if mode is not None else ModeNode.absent(),
        **kw,  # type: ignore[arg-type]
    )


def kgroup(assignment: dict[str, tuple[TopicPartition, ...]]) -> KafkaGroup:
    members = tuple(KafkaMember(f"{c}-m", c, "/h", None, tps) for c, tps in assignment.items())
    return KafkaGroup("g", KafkaGroupState.STABLE, "range", members)


def test_healthy_zookeeper_group_under_range_has_no_warnings() -> None:
    owners = {TP0: "g_a-0", TP1: "g_a-0", TP2: "g_b-0", TP3: "g_b-0"}
    v = view(
        member("g_a"), member("g_b"), owners=owners,
        authorities={"g_a": published(Authority.ZOOKEEPER), "g_b": published(Authority.ZOOKEEPER)},
        offsets={TP0: 5},
    )  # fmt: skip
    report = build_report(v, kgroup({"g_a": (TP0, TP1), "g_b": (TP2, TP3)}), partitions=PARTS,
                          kafka_offsets={TP0: 5}, log_ends={TP0: 9}, now_ms=NOW)  # fmt: skip
    assert report.warnings == ()
    assert report.owners_agree is True
    assert report.agreement_basis == "zookeeper (range)"
    row = report.partitions[0]
    assert (row.owner, row.zk_offset, row.kafka_offset, row.log_end, row.lag) == ("g_a-0", 5, 5, 9, 4)
    assert report.bridges[0].age_s == 2.0 and report.bridges[0].generation == 3


def test_unowned_partitions_and_kafka_behind_are_counted() -> None:
    v = view(member("g_a"), owners={TP0: "g_a-0", TP1: "g_a-0"}, offsets={TP0: 10, TP1: 10, TP2: 4})
    report = build_report(v, kgroup({"g_a": ()}), partitions=PARTS, kafka_offsets={TP0: 10, TP1: 3}, now_ms=NOW)
    assert "2 partitions have no owner: t-2, t-3" in report.warnings
    assert "Kafka offsets behind ZooKeeper on 2 partitions" in report.warnings
    assert report.verdict is Verdict.ERR  # an unowned partition is processed by nobody


def test_verdict_is_the_worst_severity() -> None:
    owners = {TP0: "g_a-0", TP1: "g_a-0", TP2: "g_b-0", TP3: "g_b-0"}
    zookeeper = {"g_a": published(Authority.ZOOKEEPER), "g_b": published(Authority.ZOOKEEPER)}
    healthy = view(member("g_a"), member("g_b"), owners=owners, authorities=zookeeper)
    assignment = kgroup({"g_a": (TP0, TP1), "g_b": (TP2, TP3)})
    assert build_report(healthy, assignment, partitions=PARTS, now_ms=NOW).verdict is Verdict.OK
    silent = view(member("g_a"), member("g_b"), owners=owners, authorities={"g_a": zookeeper["g_a"]})
    report = build_report(silent, assignment, partitions=PARTS, now_ms=NOW)
    assert [f.kind for f in report.findings] == [FindingKind.BRIDGE_UNPUBLISHED]
    assert report.verdict is Verdict.WARN
    assert report.to_dict()["verdict"] == "WARN"
    assert list(report.to_dict()["findings"]) == [
        {"kind": "bridge-unpublished", "severity": "WARN", "message": "bridge g_b has not published its authority"}
    ]
    assert render_text(report).splitlines()[0].startswith("group g: WARN: ")


def test_kafka_refusing_an_acl_is_an_error_finding() -> None:
    denied = KafkaNotChecked(NotChecked.DENIED, "Kafka denies Describe on Group:g to this client's principal")
    report = build_report(view(member("g_a")), None, unchecked=denied, now_ms=NOW)
    assert report.findings[0].kind is FindingKind.KAFKA_ACL_MISSING
    assert report.verdict is Verdict.ERR
    assert error_line(report) == (
        "group g is ERR: kafka-acl-missing: Kafka not checked: Kafka denies Describe on Group:g to this client's "
        "principal"
    )
    assert error_line(build_report(view(member("g_a")), kgroup({"g_a": ()}), now_ms=NOW)) is None
    unreachable = KafkaNotChecked(NotChecked.UNREACHABLE, "no answer")
    assert build_report(view(member("g_a")), None, unchecked=unreachable).verdict is Verdict.ERR


def test_unknown_mode_value_is_shown_as_such() -> None:
    report = build_report(view(member("g_a"), mode="kafak"), None, now_ms=NOW)
    assert report.mode == "unknown" and report.mode_raw == "kafak"
    assert any("unknown mode value 'kafak'" in w for w in report.warnings)
    assert "unknown ('kafak')" in render_text(report)


def test_legacy_connector_while_mode_is_kafka() -> None:
    report = build_report(view(member("g_a"), member("g_old", bridge=False), mode="kafka"), None, now_ms=NOW)
    assert report.expected_authority == "zookeeper"
    assert any(w.startswith("legacy connector present while mode is kafka") for w in report.warnings)
    assert report.legacy == ("g_old",)


def test_kafka_authority_compares_owners_with_the_kafka_assignment() -> None:
    owners = {TP0: "g_a-0", TP1: "g_b-0", TP2: "g_b-0", TP3: "g_b-0"}  # TP1 should be g_a's
    v = view(member("g_a"), member("g_b"), mode="kafka", owners=owners,
             authorities={"g_a": published(Authority.KAFKA), "g_b": published(Authority.KAFKA)})  # fmt: skip
    report = build_report(v, kgroup({"g_a": (TP0, TP1), "g_b": (TP2, TP3)}), partitions=PARTS, now_ms=NOW)
    assert report.expected_authority == "kafka"
    assert report.owners_agree is False
    assert any("owners disagree" in w and "1 partitions" in w for w in report.warnings)


def test_bridge_missing_from_kafka_group_and_stale_authority() -> None:
    v = view(member("g_a"), member("g_b"), mode="kafka",
             authorities={"g_a": published(Authority.KAFKA), "g_b": published(Authority.KAFKA)})  # fmt: skip
    report = build_report(v, kgroup({"g_a": (TP0, TP1, TP2, TP3)}), partitions=PARTS, now_ms=NOW)
    assert report.expected_authority == "zookeeper"
    assert "bridge g_b's embedded member is not in the Kafka group" in report.warnings
    assert "bridge g_a obeys kafka but should obey zookeeper" in report.warnings


def test_plain_kafka_consumers_are_their_own_kind_and_own_their_partitions() -> None:
    owners = {TP0: "g_a-0", TP1: "g_a-0"}
    v = view(member("g_a"), mode="kafka", owners=owners, authorities={"g_a": published(Authority.KAFKA)})
    report = build_report(v, kgroup({"g_a": (TP0, TP1), "plain": (TP2, TP3)}), partitions=PARTS, now_ms=NOW)
    assert [k.client_id for k in report.kafka_consumers] == ["plain"]
    assert not any("no owner" in w for w in report.warnings)
    assert report.partitions[2].owner == "kafka:plain"
    assert report.owners_agree is True


def test_plain_kafka_consumer_under_zookeeper_authority_warns_of_dual_ownership() -> None:
    report = build_report(view(member("g_a")), kgroup({"g_a": (), "plain": (TP0,)}), partitions=PARTS, now_ms=NOW)
    assert any("plain Kafka consumer(s) present while the authority is zookeeper" in w for w in report.warnings)


def test_corrupt_member_and_unpublished_bridge() -> None:
    v = view(member("g_a"), corrupt_members=(CorruptMember("g_x", "ids node is not JSON"),))
    report = build_report(v, None, now_ms=NOW)
    assert any("1 ids node(s) do not decode" in w for w in report.warnings)
    assert "bridge g_a has not published its authority" in report.warnings
    assert report.to_dict()["corrupt"] == (("g_x", "ids node is not JSON"),)


def test_missing_group() -> None:
    unchecked = KafkaNotChecked(NotChecked.NO_BROKERS, "no --bootstrap-servers given")
    report = build_report(GroupView(group="g", exists=False), None, unchecked=unchecked)
    assert "group g does not exist in ZooKeeper" in report.warnings
    assert "Kafka not checked: no --bootstrap-servers given" in report.warnings
    assert [(f.kind, f.severity) for f in report.findings] == [
        (FindingKind.GROUP_MISSING, Severity.ERR),
        (FindingKind.KAFKA_NOT_CHECKED, Severity.WARN),
    ]
    assert report.verdict is Verdict.ERR


def test_a_held_bridge_is_shown_and_explained_instead_of_a_dual_ownership_warning() -> None:
    reason = (
        "holding nothing instead of falling back to zookeeper (bridge g_b is not in the Kafka group): the Kafka "
        "group had 1 plain Kafka consumer(s) (plain); ZooKeeper's assignment knows nothing of plain Kafka consumers"
    )
    held = PublishedAuthority(Authority.ZOOKEEPER, 5, NOW - 1000, reason, held=True)
    v = view(member("g_a"), member("g_b"), mode="kafka", authorities={"g_a": held, "g_b": held})
    report = build_report(v, kgroup({"g_a": (TP0, TP1), "plain": (TP2, TP3)}), partitions=PARTS, now_ms=NOW)
    assert f"bridge g_a is {reason}" in report.warnings
    assert [b.held for b in report.bridges] == [True, True]
    assert not any("they and the bridges may own the same partitions" in w for w in report.warnings)
    assert "zookeeper (holding nothing)" in render_text(report)


def test_a_legacy_connector_next_to_plain_consumers_still_warns_of_dual_ownership() -> None:
    held = PublishedAuthority(Authority.ZOOKEEPER, 5, NOW - 1000, "holding nothing …", held=True)
    v = view(member("g_a"), member("g_l", bridge=False), mode="kafka", authorities={"g_a": held})
    report = build_report(v, kgroup({"g_a": (TP0, TP1), "plain": (TP2, TP3)}), partitions=PARTS, now_ms=NOW)
    assert any("plain Kafka consumer(s) present while the authority is zookeeper" in w for w in report.warnings)


def test_partitions_a_plain_consumer_also_holds_are_named_and_shown_in_the_table() -> None:
    """Once, the warning counted 2 partitions while every row showed owner = expected."""
    owners = {TP0: "g_a-0", TP1: "g_a-0", TP2: "g_a-0", TP3: "g_a-0"}
    v = view(member("g_a"), mode="kafka", owners=owners, authorities={"g_a": published(Authority.ZOOKEEPER)})
    report = build_report(v, kgroup({"g_a": (), "plain": (TP2, TP3)}), partitions=PARTS, now_ms=NOW)
    doubled = [w for w in report.warnings if w.startswith("dual ownership on 2 partitions")]
    assert doubled and f"{TP2} (plain)" in doubled[0] and f"{TP3} (plain)" in doubled[0]
    assert report.partitions[2].owner == "g_a-0 + kafka:plain"
    assert report.owners_agree is False


@given(
    mode=st.sampled_from([None, "kafka", "zookeeper", "kafak"]),
    bridges=st.sets(st.sampled_from("abc")),
    legacy=st.sets(st.sampled_from("xy")),
    corrupt=st.booleans(),
    in_kafka=st.one_of(st.none(), st.sets(st.sampled_from("abcp"))),
)
def test_the_expected_authority_is_the_bridges_own_rule(mode, bridges, legacy, corrupt, in_kafka) -> None:
    """kafka only for mode exactly kafka, bridges alone (a member that does not decode counts against it), at
    least one of them, and every one in the Kafka group when it could be described."""
    v = GroupView(
        group="g",
        members=tuple(member(c) for c in sorted(bridges)) + tuple(member(c, bridge=False) for c in sorted(legacy)),
        corrupt_members=(CorruptMember("z", "not JSON"),) if corrupt else (),
        migration_ids=frozenset(bridges),
        mode=ModeNode(True, mode) if mode is not None else ModeNode.absent(),
    )
    kafka = None if in_kafka is None else kgroup({c: () for c in sorted(in_kafka)})
    healthy = in_kafka is None or bridges <= in_kafka
    kafka_expected = mode == "kafka" and bridges and not legacy and not corrupt and healthy
    assert expected_authority(v, kafka) is (Authority.KAFKA if kafka_expected else Authority.ZOOKEEPER)


def test_a_bridge_that_cannot_fetch_its_partitions_is_an_error_naming_them() -> None:
    owners = {TP0: "g_a-0", TP1: "g_a-0", TP2: "g_b-0", TP3: "g_b-0"}
    stuck = PublishedAuthority(Authority.ZOOKEEPER, 3, NOW - 1000, fetch=FetchState(FetchHealth.DENIED, (TP2, TP3)))
    v = view(member("g_a"), member("g_b"), owners=owners,
             authorities={"g_a": published(Authority.ZOOKEEPER), "g_b": stuck})  # fmt: skip
    report = build_report(v, kgroup({"g_a": (TP0, TP1), "g_b": (TP2, TP3)}), partitions=PARTS, now_ms=NOW)
    assert report.verdict is Verdict.ERR
    found = [f for f in report.findings if f.kind is FindingKind.BRIDGE_CANNOT_FETCH]
    assert [f.message for f in found] == [
        "bridge g_b owns partitions it cannot fetch (denied: 2 owned partition(s) cannot be fetched: t-2, t-3)"
    ]
    assert [b.fetch for b in report.bridges] == ["ok", "denied"]
    assert PublishedAuthority.decode(stuck.encode()) == stuck
    assert b'"fetch"' not in published(Authority.ZOOKEEPER).encode()  # a healthy bridge's node is unchanged
