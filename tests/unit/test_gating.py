"""The rebalance worker's gating (`coordination.gating`) and the member mapping of its target
(`plan.kafka_members`, `plan.decided_target`): pure rules, checked over every input they can get."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from migrator.coordination.authority import AuthorityDecision, HoldKind
from migrator.coordination.gating import (
    KAFKA_TRIGGERS,
    Gate,
    claims_wait_first,
    coalesces,
    due,
    gate,
    label,
    publishes,
    reads_members_only,
    refreshable,
    releases_on_revoke,
    revoked_holdings,
    tells_listener,
    wait_timeout,
)
from migrator.coordination.plan import decided_target, kafka_members
from migrator.protocol.codecs import Authority
from migrator.protocol.events import (
    Changed,
    CommitRequest,
    Event,
    KafkaAssigned,
    KafkaLost,
    KafkaRevoked,
    SessionLost,
    SessionRestored,
    Shutdown,
    Trigger,
)
from migrator.protocol.partition import TopicPartition

triggers = st.frozensets(st.sampled_from(Trigger))
authorities = st.sampled_from(Authority)


# -- which batches evaluate -----------------------------------------------------------------------------


@given(triggers, st.booleans(), authorities)
def test_only_kafka_events_are_skipped_and_only_where_kafka_cannot_be_obeyed(
    batch: frozenset[Trigger], mode_is_kafka: bool, authority: Authority
) -> None:
    outcome = gate(batch, mode_is_kafka=mode_is_kafka, authority=authority)
    kafka_may_matter = mode_is_kafka or authority is Authority.KAFKA
    if not batch:
        assert outcome is Gate.IDLE
    elif not batch <= KAFKA_TRIGGERS or kafka_may_matter:
        assert outcome is Gate.EVALUATE
    else:
        assert outcome is (Gate.PREFETCH if Trigger.KAFKA_ASSIGNMENT in batch else Gate.IDLE)


def test_a_bridge_obeying_zookeeper_in_zookeeper_mode_only_prefetches_on_an_assignment() -> None:
    def zk(*batch: Trigger) -> Gate:
        return gate(set(batch), mode_is_kafka=False, authority=Authority.ZOOKEEPER)

    assert zk(Trigger.KAFKA_ASSIGNMENT) is Gate.PREFETCH
    assert zk(Trigger.KAFKA_LOST) is Gate.IDLE
    assert zk(Trigger.KAFKA_LOST, Trigger.IDS) is Gate.EVALUATE


@pytest.mark.parametrize(
    ("event", "coalesced"),
    [(Changed(Trigger.IDS), True), (KafkaAssigned(()), False), (KafkaLost("x"), True), (SessionLost(), True),
     (SessionRestored(), True), (KafkaRevoked(), False), (CommitRequest(), False), (Shutdown(), False)],
)  # fmt: skip
def test_events_someone_waits_on_are_handled_at_once(event: Event, coalesced: bool) -> None:
    assert coalesces(event) is coalesced


# -- what an evaluation reads, tells and publishes ----------------------------------------------------------


def test_a_mode_change_alone_reuses_the_last_snapshot() -> None:
    assert refreshable({Trigger.MODE}, last_usable=True, last_watched=False)


_REUSED_ON_ASSIGNMENT = ({Trigger.KAFKA_ASSIGNMENT}, {Trigger.MODE, Trigger.KAFKA_ASSIGNMENT})


@given(triggers, st.booleans())
def test_any_other_change_or_retry_reads_everything(batch: frozenset[Trigger], watched: bool) -> None:
    reused = batch == {Trigger.MODE} or (watched and batch in _REUSED_ON_ASSIGNMENT)
    assert refreshable(batch, last_usable=True, last_watched=watched) == reused


@pytest.mark.parametrize("batch", _REUSED_ON_ASSIGNMENT)
def test_a_kafka_assignment_reuses_a_snapshot_read_wholly_from_watched_nodes(batch: set[Trigger]) -> None:
    assert refreshable(batch, last_usable=True, last_watched=True)
    assert not refreshable(batch, last_usable=True, last_watched=False)  # partitions from the brokers: read again


def test_nothing_to_reuse_without_a_usable_snapshot() -> None:
    assert not refreshable({Trigger.MODE}, last_usable=False, last_watched=True)


@given(triggers, st.booleans())
def test_the_listener_hears_every_change_and_the_start(batch: frozenset[Trigger], changed: bool) -> None:
    assert tells_listener(changed, batch) == (changed or Trigger.START in batch)


@given(triggers, st.booleans())
def test_the_authority_is_published_when_it_changed_or_an_operator_waits(
    batch: frozenset[Trigger], changed: bool
) -> None:
    waited_for = bool(batch & {Trigger.START, Trigger.MODE, Trigger.NEW_SESSION})
    assert publishes(changed, batch) == (changed or waited_for)


def test_a_kafka_retry_alone_is_not_published() -> None:
    assert not publishes(False, {Trigger.KAFKA_LOST, Trigger.RETRY})


@given(authorities, st.booleans())
def test_a_revoke_releases_wherever_kafka_may_rule(authority: Authority, mode_is_kafka: bool) -> None:
    assert releases_on_revoke(authority, mode_is_kafka) == (authority is Authority.KAFKA or mode_is_kafka)


# -- deadlines ------------------------------------------------------------------------------------------


def test_deadlines() -> None:
    assert wait_timeout(10.0) is None and wait_timeout(10.0, None, None) is None
    assert wait_timeout(10.0, 12.5, None, 11.0) == 1.0
    assert wait_timeout(10.0, 9.0) == 0.0  # overdue: do not block
    assert not due(10.0, None) and not due(10.0, 10.5) and due(10.0, 10.0)


def test_the_log_names_triggers_in_a_stable_order() -> None:
    assert label({Trigger.RETRY, Trigger.MODE, Trigger.KAFKA_ASSIGNMENT}) == "kafka assignment, mode, retry"


# -- the member mapping of the target -----------------------------------------------------------------------


@dataclass(frozen=True)
class Described:
    member_id: str
    client_id: str
    partitions: tuple[TopicPartition, ...]


@given(
    clients=st.lists(st.sampled_from(["g_b0", "g_b1", "rdkafka", "g_gone"]), max_size=6),
    bridges=st.frozensets(st.sampled_from(["g_b0", "g_b1", "g_gone"])),
)
def test_bridges_are_keyed_by_consumer_id_and_plain_members_by_member_id(
    clients: list[str], bridges: frozenset[str]
) -> None:
    members = [Described(f"{cid}-m{i}", cid, (TopicPartition("t", i),)) for i, cid in enumerate(clients)]
    keyed = kafka_members(members, bridges)
    plain = [m for m in members if m.client_id not in bridges]
    assert all(keyed[m.member_id] == m.partitions for m in plain)  # plain consumers often share a client.id
    assert all(m.client_id in keyed for m in members if m.client_id in bridges)
    assert set(keyed) == {m.member_id for m in plain} | (bridges & set(clients))


SUBS = {"g_b0": {"t": 2}}
KAFKA_DECISION = AuthorityDecision(Authority.KAFKA, "mode is kafka and every member is a bridge in the Kafka group")
ZK_DECISION = AuthorityDecision(Authority.ZOOKEEPER, "mode is zookeeper")
PARTITIONS = {"t": (0, 1)}


def test_a_held_decision_targets_nothing() -> None:
    held = AuthorityDecision(Authority.ZOOKEEPER, "holding nothing …", hold=HoldKind.PLAIN)
    target = decided_target(held, "g_b0", SUBS, PARTITIONS, "range", (TopicPartition("t", 0),), None)
    assert not target.own and not target.global_


def test_kafka_authority_subdivides_the_kafka_assignment_and_zookeeper_uses_the_strategy() -> None:
    assigned = (TopicPartition("t", 1),)
    kafka = decided_target(KAFKA_DECISION, "g_b0", SUBS, PARTITIONS, "range", assigned, None)
    assert set(kafka.own) == {TopicPartition("t", 1)}
    zk = decided_target(ZK_DECISION, "g_b0", SUBS, PARTITIONS, "range", assigned, None)
    assert set(zk.own) == {TopicPartition("t", 0), TopicPartition("t", 1)}
    assert not decided_target(KAFKA_DECISION, "g_b0", SUBS, PARTITIONS, "range", None, None).own


@given(
    owned=st.dictionaries(st.integers(0, 7), st.sampled_from(["c-0", "c-1"])),
    revoked=st.none() | st.frozensets(st.integers(0, 7)),
    authority=st.sampled_from(Authority),
    mode_is_kafka=st.booleans(),
)
def test_a_revoke_releases_what_kafka_takes(owned, revoked, authority, mode_is_kafka) -> None:
    """Eager (None) takes everything; cooperative under Kafka authority only the revoked partitions, so the
    rest keeps its owner nodes; outside mode kafka under ZooKeeper authority nothing."""
    held = {TopicPartition("t", p): th for p, th in owned.items()}
    going = None if revoked is None else frozenset(TopicPartition("t", p) for p in revoked)
    released = revoked_holdings(held, going, authority, mode_is_kafka)
    if authority is Authority.ZOOKEEPER and not mode_is_kafka:
        assert released == {}
    elif going is None or authority is Authority.ZOOKEEPER:
        assert released == held
    else:
        assert released == {tp: th for tp, th in held.items() if tp in going}


def test_a_claim_after_a_kafka_rebalance_obeyed_as_before_creates_at_once() -> None:
    """The previous owners released in the revoke before the assignment: no wait, one read per partition fewer."""
    kafka = Authority.KAFKA
    assert not claims_wait_first({Trigger.KAFKA_ASSIGNMENT}, prior=kafka, decided=kafka)
    assert not claims_wait_first({Trigger.KAFKA_ASSIGNMENT, Trigger.IDS}, prior=kafka, decided=kafka)
    assert not claims_wait_first(
        {Trigger.KAFKA_ASSIGNMENT, Trigger.START}, prior=Authority.ZOOKEEPER, decided=kafka
    )  # a joining bridge's first claim


@pytest.mark.parametrize(
    ("triggers", "prior", "decided"),
    [
        ({Trigger.MODE, Trigger.KAFKA_ASSIGNMENT}, Authority.KAFKA, Authority.KAFKA),  # a switch
        ({Trigger.KAFKA_ASSIGNMENT}, Authority.ZOOKEEPER, Authority.KAFKA),  # a switch to Kafka
        ({Trigger.KAFKA_ASSIGNMENT}, Authority.KAFKA, Authority.ZOOKEEPER),  # a fallback
        ({Trigger.IDS}, Authority.ZOOKEEPER, Authority.ZOOKEEPER),  # a ZooKeeper rebalance
        ({Trigger.MODE}, Authority.ZOOKEEPER, Authority.KAFKA),
    ],
)
def test_every_other_claim_waits_for_the_previous_owners_first(
    triggers: set[Trigger], prior: Authority, decided: Authority
) -> None:
    assert claims_wait_first(triggers, prior=prior, decided=decided)


@given(st.sets(st.sampled_from(list(Trigger))), st.booleans(), st.booleans())
def test_only_member_listing_changes_read_the_changed_members_alone(
    triggers: set[Trigger], usable: bool, watched: bool
) -> None:
    """Any trigger for a part the members' read does not cover (mode, topics, brokers, a new session, a
    retry, a Kafka loss) reads the whole snapshot; the start reads the members alone over the snapshot read
    while the embedded member joined."""
    members = {Trigger.IDS, Trigger.MIGRATION_IDS, Trigger.START}
    expected = usable and watched and bool(triggers & members) and triggers <= members | {Trigger.KAFKA_ASSIGNMENT}
    assert reads_members_only(triggers, usable, watched) is expected
    if Trigger.MODE in triggers or Trigger.NEW_SESSION in triggers:
        assert not reads_members_only(triggers, usable, watched)


def test_a_bridge_starting_on_its_first_assignment_reads_the_members_alone() -> None:
    """The joining bridge's first rebalance, on the path every partition of the group waits on, reads only
    the members registered since its read during the Kafka join."""
    assert reads_members_only({Trigger.START, Trigger.KAFKA_ASSIGNMENT}, True, True)
