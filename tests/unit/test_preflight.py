"""The set-mode preflight: every refusal reason, from pure inputs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from migrator.coordination.preflight import preflight
from migrator.protocol.codecs import Authority, Mode, ModeNode, PublishedAuthority, Registration
from migrator.protocol.group_view import CorruptMember, GroupView, Member
from migrator.protocol.kafka import KafkaGroup, KafkaGroupState, KafkaMember, RebalanceProtocol

REG = Registration({"t": 1}, timestamp_ms=1)


def member(cid: str, bridge: bool = True) -> Member:
    return Member(cid, REG, ctime_ms=0, is_bridge=bridge)


def view(*members: Member, corrupt: tuple[CorruptMember, ...] = (), mode: ModeNode | None = None) -> GroupView:
    return GroupView(
        group="g",
        members=members,
        corrupt_members=corrupt,
        migration_ids=frozenset(m.consumer_id for m in members if m.is_bridge),
        mode=mode or ModeNode.absent(),
    )


def kafka(*client_ids: str, assignor: str = "range", state: str = "STABLE") -> KafkaGroup:
    members = tuple(KafkaMember(f"{c}-mid", c, "/127.0.0.1", None, ()) for c in client_ids)
    state_now = KafkaGroupState.from_name(state if members else "EMPTY")
    return KafkaGroup("g", state_now, assignor if members else "", members)


def test_all_bridges_in_kafka_group_may_switch_to_kafka() -> None:
    check = preflight(Mode.KAFKA, view(member("g_a"), member("g_b")), kafka("g_a", "g_b"), 10)
    assert check.ok, check.refusals


def test_legacy_connector_refuses_kafka() -> None:
    check = preflight(Mode.KAFKA, view(member("g_a"), member("g_old", bridge=False)), kafka("g_a"), None)
    assert not check.ok
    assert any("legacy connector" in r and "g_old" in r for r in check.refusals)


def test_missing_embedded_member_refuses_kafka() -> None:
    check = preflight(Mode.KAFKA, view(member("g_a"), member("g_b")), kafka("g_a"), None)
    assert any("embedded member is not in the Kafka group" in r and "g_b" in r for r in check.refusals)


def test_group_larger_than_group_max_size_refuses_kafka() -> None:
    check = preflight(Mode.KAFKA, view(member("g_a"), member("g_b"), member("g_c")), kafka("g_a", "g_b"), 2)
    assert any("group.max.size is 2" in r and "3 Kafka members" in r for r in check.refusals)


def test_plain_kafka_consumers_count_toward_group_max_size() -> None:
    check = preflight(Mode.KAFKA, view(member("g_a")), kafka("g_a", "rdkafka", "rdkafka"), 2)
    assert any("group.max.size" in r for r in check.refusals)


def test_unshareable_assignor_refuses_kafka() -> None:
    check = preflight(Mode.KAFKA, view(member("g_a")), kafka("g_a", assignor="sticky"), None)
    assert any("'sticky'" in r for r in check.refusals)
    for shareable in ("roundrobin", "cooperative-sticky"):
        assert preflight(Mode.KAFKA, view(member("g_a")), kafka("g_a", assignor=shareable), None).ok


@pytest.mark.parametrize(
    ("bridge", "assignor", "disagree"),
    [
        (RebalanceProtocol.EAGER, "cooperative-sticky", True),
        (RebalanceProtocol.COOPERATIVE, "range", True),
        (RebalanceProtocol.COOPERATIVE, "cooperative-sticky", False),  # outside the group for another reason
        (None, "cooperative-sticky", False),  # published by a version that does not say
    ],
)
def test_a_bridge_refused_for_its_rebalance_protocol_is_named(bridge, assignor, disagree) -> None:
    """Members disagree on the rebalance protocol: the refusal says so instead of only "not in the group"."""
    published = PublishedAuthority(Authority.ZOOKEEPER, 1, 0, protocol=bridge)
    group = replace(view(member("g_a")), authorities={"g_a": published})
    check = preflight(Mode.KAFKA, group, kafka("plain", assignor=assignor), None)
    named = [r for r in check.refusals if r.startswith("members disagree on the rebalance protocol")]
    assert (len(named) == 1 and "g_a" in named[0]) is disagree, check.refusals
    assert any("not in the Kafka group: g_a" in r for r in check.refusals) is not disagree, check.refusals


def test_rebalancing_group_without_assignor_refuses_kafka() -> None:
    check = preflight(Mode.KAFKA, view(member("g_a")), kafka("g_a", assignor="", state="PREPARING_REBALANCE"), None)
    assert any("no chosen assignor" in r for r in check.refusals)
    assert check.settling  # a refusal that goes away by itself: set-mode --wait waits it out
    assert not preflight(Mode.KAFKA, view(member("g_a")), kafka("g_a", assignor="range"), None).settling


def test_no_bridges_refuses_kafka() -> None:
    check = preflight(Mode.KAFKA, view(), kafka(), None)
    assert any("no bridge connectors" in r for r in check.refusals)


def test_corrupt_ids_node_refuses_kafka() -> None:
    corrupt = (CorruptMember("g_x", "ids node is not JSON"),)
    check = preflight(Mode.KAFKA, view(member("g_a"), corrupt=corrupt), kafka("g_a"), None)
    assert any("do not decode" in r and "g_x" in r for r in check.refusals)


def test_kafka_unknown_refuses_kafka_with_the_reason() -> None:
    check = preflight(Mode.KAFKA, view(member("g_a")), None, None, kafka_error="no answer within 10s")
    assert any("cannot be checked: no answer within 10s" in r for r in check.refusals)
    check = preflight(Mode.KAFKA, view(member("g_a")), None, None)
    assert any("no --bootstrap-servers" in r for r in check.refusals)


def test_missing_group_refuses_both_directions() -> None:
    missing = GroupView(group="g", exists=False)
    assert any("does not exist" in r for r in preflight(Mode.ZOOKEEPER, missing, kafka(), None).refusals)
    assert any("does not exist" in r for r in preflight(Mode.KAFKA, missing, kafka(), None).refusals)


def test_plain_kafka_consumer_refuses_zookeeper() -> None:
    check = preflight(Mode.ZOOKEEPER, view(member("g_a")), kafka("g_a", "plain-1"), None)
    assert len(check.refusals) == 1
    assert "plain-1" in check.refusals[0] and "dual ownership" in check.refusals[0]


def test_bridges_only_may_switch_to_zookeeper_even_with_legacy_members() -> None:
    check = preflight(Mode.ZOOKEEPER, view(member("g_a"), member("g_old", bridge=False)), kafka("g_a"), None)
    assert check.ok


def test_zookeeper_without_kafka_is_refused() -> None:
    """Unchecked, a plain Kafka consumer would keep its partitions while the bridges take them."""
    check = preflight(Mode.ZOOKEEPER, view(member("g_a")), None, None, kafka_error="no brokers found")
    assert not check.ok
    assert any("cannot be checked for plain Kafka consumers" in r and "no brokers found" in r for r in check.refusals)


def test_unknown_mode_value_is_mentioned() -> None:
    check = preflight(Mode.ZOOKEEPER, view(member("g_a"), mode=ModeNode(True, "kafak")), kafka("g_a"), None)
    assert check.ok
    assert any("'kafak'" in w for w in check.warnings)
