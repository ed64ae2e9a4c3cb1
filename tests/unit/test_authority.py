"""The authority rule of CONTRACT §5, exhaustively over its inputs."""

from __future__ import annotations

import logging

from hypothesis import given
from hypothesis import strategies as st

from migrator.coordination.authority import (
    HOLD_WARN_S,
    NEVER_DESCRIBED,
    AuthorityDecision,
    Hold,
    HoldKind,
    KafkaGroupView,
    KafkaHealth,
    decide_authority,
    guard_fallback,
    in_kafka_group,
    needs_group_check,
    next_hold,
    presumably_whole,
    routine,
)
from migrator.protocol.codecs import Authority, ModeNode
from migrator.protocol.kafka import KafkaGroup, KafkaGroupState, KafkaMember

HEALTHY = KafkaHealth(joined=True)


def described(*client_ids: str) -> KafkaGroup:
    """A described Kafka group with one member per client id (plain consumers may share one)."""
    members = tuple(KafkaMember(f"{c}-{i}", c, "/127.0.0.1", None, ()) for i, c in enumerate(client_ids))
    return KafkaGroup("g", KafkaGroupState.STABLE, "range", members)


KAFKA = ModeNode.decode(b"kafka")


def test_kafka_only_when_every_condition_holds() -> None:
    d = decide_authority(KAFKA, {"a", "b"}, {"a", "b"}, HEALTHY)
    assert d.authority is Authority.KAFKA


def test_absent_mode_means_zookeeper() -> None:
    d = decide_authority(ModeNode.absent(), {"a"}, {"a"}, HEALTHY)
    assert (d.authority, d.reason) == (Authority.ZOOKEEPER, "no mode node")


def test_zookeeper_mode() -> None:
    assert decide_authority(ModeNode.decode(b"zookeeper"), {"a"}, {"a"}, HEALTHY).authority is Authority.ZOOKEEPER


def test_unknown_value_is_reported() -> None:
    for raw in (b"kafak", b"KAFKA", b"kafka\n", b"", b"\xff\xfe"):
        d = decide_authority(ModeNode.decode(raw), {"a"}, {"a"}, HEALTHY)
        assert d.authority is Authority.ZOOKEEPER
        assert d.unknown_mode_value is not None


def test_a_legacy_member_forces_zookeeper() -> None:
    d = decide_authority(KAFKA, {"a", "legacy"}, {"a"}, HEALTHY)
    assert d.authority is Authority.ZOOKEEPER and "legacy" in d.reason


def test_kafka_unavailable_forces_zookeeper() -> None:
    d = decide_authority(KAFKA, {"a"}, {"a"}, KafkaHealth(joined=False, reason="GROUP_MAX_SIZE_REACHED (81)"))
    assert d.authority is Authority.ZOOKEEPER and "GROUP_MAX_SIZE_REACHED" in d.reason


def test_a_bridge_missing_from_the_kafka_group_forces_zookeeper() -> None:
    d = decide_authority(KAFKA, {"a", "b"}, {"a", "b"}, KafkaHealth(joined=True, missing_bridges=frozenset({"b"})))
    assert d.authority is Authority.ZOOKEEPER and "b" in d.reason


def test_bridges_that_are_not_registered_members_do_not_matter() -> None:
    # a migration/ids node without its ids node (a bridge half-way through leaving) is not a legacy member
    assert decide_authority(KAFKA, {"a"}, {"a", "gone"}, HEALTHY).authority is Authority.KAFKA


mode_values = st.one_of(st.none(), st.binary(max_size=12), st.sampled_from([b"kafka", b"zookeeper"]))
consumer_ids = st.frozensets(st.sampled_from("abcd"))
rule_inputs = {"raw": mode_values, "members": consumer_ids, "bridges": consumer_ids, "joined": st.booleans(),
               "missing": consumer_ids}  # fmt: skip


@given(**rule_inputs)
def test_kafka_implies_every_condition(raw, members, bridges, joined, missing) -> None:
    mode = ModeNode.absent() if raw is None else ModeNode.decode(raw)
    d = decide_authority(mode, members, bridges, KafkaHealth(joined=joined, missing_bridges=missing))
    if d.authority is Authority.KAFKA:
        assert raw == b"kafka" and members <= bridges and joined and not missing
        assert needs_group_check(mode, members, bridges)
    else:
        assert d.reason


# -- the fallback guard: never fall back onto partitions plain Kafka consumers process (§6.1) ----------------

LEGACY_FALLBACK = decide_authority(KAFKA, {"a", "legacy"}, {"a"}, HEALTHY)
WITH_PLAIN = KafkaGroupView(described("a", "rdkafka"))


def test_fallback_with_a_plain_consumer_in_the_group_holds_nothing() -> None:
    d = guard_fallback(LEGACY_FALLBACK, KAFKA, {"a"}, WITH_PLAIN)
    assert d.held and d.authority is Authority.ZOOKEEPER
    assert d.reason.startswith("holding nothing instead of falling back to zookeeper (legacy connector registered")
    assert "1 member(s) that are no registered bridge" in d.reason and "rdkafka" in d.reason


def test_fallback_without_plain_consumers_is_unchanged() -> None:
    assert guard_fallback(LEGACY_FALLBACK, KAFKA, {"a"}, KafkaGroupView(described("a"))) == LEGACY_FALLBACK
    assert guard_fallback(LEGACY_FALLBACK, KAFKA, {"a"}, KafkaGroupView(described())) == LEGACY_FALLBACK


def test_every_fallback_reason_is_guarded() -> None:
    unavailable = KafkaHealth(joined=False, reason="GROUP_MAX_SIZE_REACHED (81)")
    for decision in (
        LEGACY_FALLBACK,
        decide_authority(KAFKA, {"a"}, {"a"}, unavailable),
        decide_authority(KAFKA, {"a", "b"}, {"a", "b"}, KafkaHealth(joined=True, missing_bridges=frozenset("b"))),
    ):
        assert decision.authority is Authority.ZOOKEEPER
        held = guard_fallback(decision, KAFKA, {"a", "b"}, WITH_PLAIN)
        assert held.held and decision.reason in held.reason


def test_the_last_known_composition_counts_when_the_group_cannot_be_described() -> None:
    d = guard_fallback(LEGACY_FALLBACK, KAFKA, {"a"}, KafkaGroupView(described("rdkafka"), current=False))
    assert d.held and "when it was last described" in d.reason


def test_a_group_never_described_or_rebalancing_is_held_conservatively() -> None:
    assert guard_fallback(LEGACY_FALLBACK, KAFKA, {"a"}, NEVER_DESCRIBED).held
    rebalancing = KafkaGroupView(described("a"), rebalancing=True)
    d = guard_fallback(LEGACY_FALLBACK, KAFKA, {"a"}, rebalancing)
    assert d.hold is HoldKind.REBALANCE and "rebalance is in progress" in d.reason


def test_only_a_hold_for_a_rebalance_in_progress_is_transient() -> None:
    """The worker logs a transient hold at INFO (every Kafka join or leave has one), the others at ERROR."""
    d = guard_fallback(LEGACY_FALLBACK, KAFKA, {"a"}, KafkaGroupView(described("a"), rebalancing=True))
    assert d.hold is HoldKind.REBALANCE
    for lasting in (NEVER_DESCRIBED, WITH_PLAIN, KafkaGroupView(described("rdkafka"), current=False)):
        d = guard_fallback(LEGACY_FALLBACK, KAFKA, {"a"}, lasting)
        assert d.hold is HoldKind.PLAIN


def test_kafka_authority_and_other_modes_are_never_held() -> None:
    healthy = decide_authority(KAFKA, {"a"}, {"a"}, HEALTHY)
    assert guard_fallback(healthy, KAFKA, {"a"}, WITH_PLAIN) == healthy
    for raw in (None, b"zookeeper", b"kafak"):
        mode = ModeNode.absent() if raw is None else ModeNode.decode(raw)
        d = decide_authority(mode, {"a"}, {"a"}, HEALTHY)
        assert guard_fallback(d, mode, {"a"}, WITH_PLAIN) == d


def test_a_kafka_member_of_an_unregistered_bridge_counts_as_plain() -> None:
    # a bridge half-way through leaving (or whose ZooKeeper session expired) may still be processing
    d = guard_fallback(LEGACY_FALLBACK, KAFKA, {"a"}, KafkaGroupView(described("a", "gone")))
    assert d.held and "gone" in d.reason


@given(
    **rule_inputs,
    clients=st.one_of(st.none(), st.lists(st.sampled_from("abcdxy"), max_size=6).map(tuple)),
    current=st.booleans(),
    rebalancing=st.booleans(),
)
def test_the_guard_never_lets_a_bridge_obey_zookeeper_next_to_plain_consumers_in_mode_kafka(
    raw, members, bridges, joined, missing, clients, current, rebalancing
) -> None:
    mode = ModeNode.absent() if raw is None else ModeNode.decode(raw)
    rule = decide_authority(mode, members, bridges, KafkaHealth(joined=joined, missing_bridges=missing))
    registered = members & bridges
    group = KafkaGroupView(None if clients is None else described(*clients), current=current, rebalancing=rebalancing)
    d = guard_fallback(rule, mode, registered, group)
    assert d.authority is rule.authority and d.unknown_mode_value == rule.unknown_mode_value
    plain_possible = clients is None or rebalancing or bool(set(clients) - registered)
    must_hold = raw == b"kafka" and rule.authority is Authority.ZOOKEEPER and plain_possible
    assert d.held == must_hold
    assert (d.hold is HoldKind.REBALANCE) == (d.held and rebalancing)
    if d.held:
        assert rule.reason in d.reason
    else:
        assert d == rule


# -- how loud a hold is: every Kafka join or leave holds the bridges for a moment, which is no WARNING ------

REBALANCING = guard_fallback(LEGACY_FALLBACK, KAFKA, {"a"}, KafkaGroupView(described("a"), rebalancing=True))
PLAIN_HOLD = guard_fallback(LEGACY_FALLBACK, KAFKA, {"a"}, WITH_PLAIN)
BACK_TO_KAFKA = decide_authority(KAFKA, {"a"}, {"a"}, HEALTHY)


def levels(decisions: list[tuple[float, AuthorityDecision]]) -> list[int | None]:
    hold, out = Hold(), []
    for now, decision in decisions:
        hold, level, _ = next_hold(hold, decision, now)
        out.append(level)
    return out


def test_a_short_hold_for_a_rebalance_in_progress_is_logged_at_info_both_ways() -> None:
    assert routine(Hold(), REBALANCING) and routine(Hold(HoldKind.REBALANCE, 0.0), BACK_TO_KAFKA)
    assert levels([(0.0, REBALANCING), (0.05, BACK_TO_KAFKA)]) == [logging.INFO, logging.INFO]


def test_a_rebalance_hold_that_lasts_warns_once_and_its_end_warns() -> None:
    lasting = [(0.0, REBALANCING), (2.0, REBALANCING), (HOLD_WARN_S, REBALANCING), (7.0, REBALANCING)]
    assert levels([*lasting, (8.0, BACK_TO_KAFKA)]) == [logging.INFO, None, logging.WARNING, None, logging.WARNING]
    assert not routine(Hold(HoldKind.REBALANCE, 0.0, warned=True), BACK_TO_KAFKA)


def test_the_guard_proper_is_an_error_and_its_end_a_warning() -> None:
    assert not routine(Hold(), PLAIN_HOLD)
    assert levels([(0.0, PLAIN_HOLD), (2.0, PLAIN_HOLD), (2.1, REBALANCING), (2.2, BACK_TO_KAFKA)]) == [
        logging.ERROR, None, None, logging.WARNING,
    ]  # fmt: skip


def test_a_rebalance_hold_that_ends_in_a_real_fallback_warns() -> None:
    """The rebalance is over and the rule says zookeeper with no plain member: the bridge obeys ZooKeeper."""
    assert not routine(Hold(HoldKind.REBALANCE, 0.0), LEGACY_FALLBACK)
    assert levels([(0.0, REBALANCING), (0.1, LEGACY_FALLBACK)]) == [logging.INFO, logging.WARNING]


@given(st.lists(st.sampled_from([REBALANCING, PLAIN_HOLD, BACK_TO_KAFKA, LEGACY_FALLBACK]), max_size=12))
def test_a_hold_that_is_not_a_short_rebalance_is_never_only_at_info(decisions: list[AuthorityDecision]) -> None:
    """Whatever the sequence, a hold by the guard proper, or one that lasted, reaches WARNING or above."""
    hold, loud = Hold(), False
    for i, decision in enumerate(decisions):
        hold, level, _ = next_hold(hold, decision, float(i) * 2.0)
        loud = loud or (level is not None and level >= logging.WARNING)
        if decision is PLAIN_HOLD or (hold.kind is not None and float(i) * 2.0 - hold.since >= HOLD_WARN_S):
            assert loud and hold.warned


@given(st.sets(st.sampled_from("abcd")), st.sets(st.sampled_from("abcd")))
def test_a_pykafka_dialect_bridge_joins_kafka_only_without_legacy_members(members: set[str], bridges: set[str]) -> None:
    """A Scala bridge is always in the Kafka group; one in the pykafka dialect only while no registered member
    is a legacy one (their generation-less commits need a group without live members)."""
    assert in_kafka_group(members, bridges, beside_legacy=True)
    assert in_kafka_group(members, bridges, beside_legacy=False) is (members <= bridges)


def test_an_assignment_is_presumed_whole_only_when_the_last_stable_describe_had_every_registered_bridge() -> None:
    assert presumably_whole(described("a", "b", "p"), {"a", "b"}, "a")  # a plain consumer beside them is fine
    assert not presumably_whole(None, {"a", "b"}, "a")  # never described
    assert not presumably_whole(described("a"), {"a", "b"}, "a")  # b not seen in the group (joining)
    assert not presumably_whole(described("a", "b"), {"b"}, "a")  # this bridge is not registered
    rebalancing = KafkaGroup("g", KafkaGroupState.from_name("PreparingRebalance"), "", described("a", "b").members)
    assert not presumably_whole(rebalancing, {"a", "b"}, "a")
