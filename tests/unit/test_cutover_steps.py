"""The cutover's step rule: from any state it picks the first step left, never one already in place, and
refuses the groups it must not touch."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kazoo.security import ACL, OPEN_ACL_UNSAFE, Id, Permissions

from migrator.ops.cutover import WaitProgress, cutover_facts
from migrator.protocol.codecs import ModeNode, Registration
from migrator.protocol.cutover import (
    STEPS,
    CutoverFacts,
    Decision,
    Direction,
    Fence,
    Refusal,
    Route,
    Step,
    next_step,
    refusal_text,
    route,
)
from migrator.protocol.dialect import Dialect, OwnerNodeName, OwnerRead
from migrator.protocol.group import Group
from migrator.protocol.group_view import CorruptMember, GroupView, Member
from migrator.protocol.kafka import KafkaGroup, KafkaGroupState, KafkaMember
from migrator.protocol.layout_dialect import GroupLayout
from migrator.protocol.partition import TopicPartition as TP
from migrator.zk.fence import FENCED_WORLD_PERMS, LIFTED_WORLD_PERMS, ids_acl, members_can_create

REG = Registration({"t": 1}, timestamp_ms=1)


@dataclass(frozen=True)
class State:
    """What the steps change, as a model of ZooKeeper and Kafka."""

    fenced: bool = False
    legacy: int = 0
    bridges: int = 0
    corrupt: int = 0
    owner_nodes: int = 0
    mode_kafka: bool = False
    to_kafka: bool = False
    to_zookeeper: bool = False
    kafka_members: int = 0
    admin: bool = True

    def facts(self) -> CutoverFacts:
        members = tuple(Member(f"l{i}", REG, 0, False) for i in range(self.legacy)) + tuple(
            Member(f"b{i}", REG, 0, True) for i in range(self.bridges)
        )
        view = GroupView(
            "g",
            members=members,
            corrupt_members=tuple(CorruptMember(f"x{i}", "not JSON") for i in range(self.corrupt)),
            migration_ids=frozenset(f"b{i}" for i in range(self.bridges)),
            mode=ModeNode.decode(b"kafka" if self.mode_kafka else b"zookeeper"),
        )
        kafka_members = tuple(KafkaMember(f"k{i}", f"k{i}", "/h", None, ()) for i in range(self.kafka_members))
        state = KafkaGroupState.STABLE if kafka_members else KafkaGroupState.EMPTY
        return CutoverFacts(
            Group(view, KafkaGroup("g", state, "range", kafka_members)),
            Fence(ids_exists=True, members_can_create=not self.fenced),
            self.owner_nodes,
            self.admin,
            to_kafka={TP("t", 0): 5} if self.to_kafka else {},
            to_zookeeper={TP("t", 0): 7} if self.to_zookeeper else {},
        )


EFFECTS = {
    Step.FENCE: {"fenced": True},
    Step.WAIT_EMPTY: {"legacy": 0, "owner_nodes": 0},
    Step.CARRY_TO_KAFKA: {"to_kafka": False},
    Step.RECORD_KAFKA: {"mode_kafka": True},
    Step.CARRY_TO_ZOOKEEPER: {"to_zookeeper": False},
    Step.RECORD_ZOOKEEPER: {"mode_kafka": False},
    Step.LIFT_FENCE: {"fenced": False},
}


def run(state: State, direction: Direction, limit: int = 10) -> tuple[list[Step], Decision, State]:
    """Decide and apply steps until done or refused: (steps taken, final decision, final state)."""
    steps: list[Step] = []
    for _ in range(limit):
        decision = next_step(state.facts(), direction)
        if decision.step is None:
            return steps, decision, state
        steps.append(decision.step)
        state = replace(state, **EFFECTS[decision.step])  # type: ignore[arg-type]
    raise AssertionError(f"no end after {steps}")


legacy_states = st.builds(
    State,
    fenced=st.booleans(),
    legacy=st.integers(0, 3),
    owner_nodes=st.integers(0, 3),
    mode_kafka=st.booleans(),
    to_kafka=st.booleans(),
)


@given(legacy_states)
def test_forward_takes_each_step_left_once_in_order_and_ends_cut_over(state: State) -> None:
    steps, decision, end = run(state, Direction.FORWARD)
    assert decision.done and end.facts().cut_over
    order = STEPS[Direction.FORWARD]
    assert steps == sorted(set(steps), key=order.index)
    assert (Step.FENCE in steps) == (not state.fenced)
    assert (Step.CARRY_TO_KAFKA in steps) == state.to_kafka


@given(legacy_states, st.integers(0, 4))
def test_an_interrupted_run_resumed_takes_the_same_steps_as_one_run(state: State, cut: int) -> None:
    whole, _, _ = run(state, Direction.FORWARD)
    first, resumed = whole[:cut], state
    for step in first:
        resumed = replace(resumed, **EFFECTS[step])  # type: ignore[arg-type]
    rest, decision, _ = run(resumed, Direction.FORWARD)
    assert decision.done and first + rest == whole


@given(legacy_states, st.booleans())
def test_rollback_after_cutover_lifts_the_fence_last(state: State, kafka_ahead: bool) -> None:
    _, _, cut = run(state, Direction.FORWARD)
    steps, decision, end = run(replace(cut, to_zookeeper=kafka_ahead), Direction.ROLLBACK)
    assert decision.done and not end.fenced and not end.mode_kafka
    assert steps[-1] is Step.LIFT_FENCE
    assert (Step.CARRY_TO_ZOOKEEPER in steps) == kafka_ahead
    assert run(end, Direction.ROLLBACK)[0] == []


def test_a_cut_over_group_stays_done_while_its_kafka_consumers_run_and_commit() -> None:
    done = State(fenced=True, mode_kafka=True, kafka_members=2, to_zookeeper=True)
    assert next_step(done.facts(), Direction.FORWARD).done
    assert next_step(replace(done, admin=False).facts(), Direction.FORWARD).done


def refusal(state: State, direction: Direction = Direction.FORWARD) -> Refusal | None:
    return next_step(state.facts(), direction).refusal


def test_refusals() -> None:
    assert refusal(State(legacy=2, admin=False)) is Refusal.NO_ADMIN
    assert refusal(State(bridges=2)) is Refusal.BRIDGES
    assert refusal(State(bridges=1, legacy=1)) is Refusal.MIXED
    assert refusal(State(legacy=1, corrupt=1)) is Refusal.UNDECODABLE
    assert refusal(State(fenced=True, to_kafka=True, kafka_members=1)) is Refusal.KAFKA_MEMBERS
    assert refusal(State(fenced=True, mode_kafka=True, kafka_members=1), Direction.ROLLBACK) is Refusal.KAFKA_MEMBERS
    assert refusal(State(mode_kafka=True, bridges=2), Direction.ROLLBACK) is Refusal.BRIDGES
    assert refusal(State(mode_kafka=True), Direction.ROLLBACK) is Refusal.NOT_CUT_OVER
    assert refusal(State(fenced=True, admin=False), Direction.ROLLBACK) is Refusal.NO_ADMIN


def test_live_kafka_members_refuse_only_the_offsets_step() -> None:
    before = State(legacy=1, kafka_members=1, to_kafka=True)
    assert next_step(before.facts(), Direction.FORWARD) == Decision(Step.FENCE)
    assert next_step(replace(before, fenced=True).facts(), Direction.FORWARD) == Decision(Step.WAIT_EMPTY)
    carried = State(fenced=True, kafka_members=1)
    assert next_step(carried.facts(), Direction.FORWARD) == Decision(Step.RECORD_KAFKA)


def test_each_refusal_says_what_to_do() -> None:
    facts = State(bridges=1, legacy=1, kafka_members=1).facts()
    for reason in Refusal:
        assert refusal_text(reason, facts)
    assert "set-mode" in refusal_text(Refusal.BRIDGES, facts)
    assert "l0" in refusal_text(Refusal.MIXED, facts) and "b0" in refusal_text(Refusal.MIXED, facts)


def test_each_group_has_one_route() -> None:
    assert route(State(bridges=2).facts().group) is Route.SET_MODE
    assert route(State(legacy=2).facts().group) is Route.CUTOVER
    assert route(State(bridges=1, legacy=1).facts().group) is Route.BLOCKED
    assert route(State(legacy=1, corrupt=1).facts().group) is Route.BLOCKED


def test_the_fence_is_read_from_who_may_create_under_ids() -> None:
    admin = "digest:ops:s3cret"
    assert members_can_create(list(OPEN_ACL_UNSAFE))  # an unprotected group
    assert members_can_create(ids_acl(LIFTED_WORLD_PERMS, admin))  # as `acl protect` leaves it
    assert not members_can_create(ids_acl(FENCED_WORLD_PERMS, admin))
    own = ACL(Permissions.CREATE | Permissions.READ, Id("digest", "app:x"))  # members with an identity of their own
    assert members_can_create([own, ACL(Permissions.ALL, Id("digest", "ops:y"))])


def layout_with_owner_nodes(count: int) -> GroupLayout:
    return GroupLayout(
        owner_nodes=tuple(OwnerRead(Dialect.SCALA, OwnerNodeName(TP("t", p)), "l0-0") for p in range(count))
    )


@given(st.integers(0, 3), st.integers(0, 2), st.integers(0, 3))
def test_the_wait_is_done_over_one_read_exactly_when_nobody_is_left_in_zookeeper(
    legacy: int, corrupt: int, owner_nodes: int
) -> None:
    view = GroupView(
        "g",
        members=tuple(Member(f"l{i}", REG, 0, False) for i in range(legacy)),
        corrupt_members=tuple(CorruptMember(f"x{i}", "not JSON") for i in range(corrupt)),
    )
    progress = WaitProgress.of(view, layout_with_owner_nodes(owner_nodes))
    assert progress.done == (legacy + corrupt + owner_nodes == 0)
    assert len(progress.members) == legacy + corrupt and progress.owner_nodes == owner_nodes
    assert f"{legacy + corrupt} legacy member(s) registered, {owner_nodes} owner node(s) left" == progress.summary()


offsets = st.dictionaries(st.builds(TP, st.just("t"), st.integers(0, 3)), st.integers(0, 9), max_size=4)


@given(st.booleans(), st.integers(0, 3), offsets, offsets)
def test_a_decision_is_over_one_read_of_the_group_its_fence_and_owner_nodes_included(
    fenced: bool, owner_nodes: int, zookeeper: dict[TP, int], kafka: dict[TP, int]
) -> None:
    fence = Fence(ids_exists=True, members_can_create=not fenced)
    view = GroupView("g", offsets=zookeeper, fence=fence)
    empty = KafkaGroup("g", KafkaGroupState.EMPTY, "", ())
    facts = cutover_facts((view, layout_with_owner_nodes(owner_nodes)), empty, kafka, admin_identity=True)
    assert facts.group.zookeeper is view and facts.fence is fence and facts.owner_nodes == owner_nodes
    assert facts.group.kafka_committed == kafka
    carried = {**kafka, **facts.to_kafka}  # Kafka after the carry: max of both stores, nothing rewritten
    assert all(carried[tp] == max(o, kafka.get(tp, -1)) for tp, o in zookeeper.items())
    assert all(kafka.get(tp) != o for tp, o in facts.to_kafka.items())
    assert not zookeeper or {**zookeeper, **facts.to_zookeeper}.keys() >= kafka.keys()
    assert zookeeper or not facts.to_zookeeper  # a group without ZooKeeper offsets (pykafka's) gets none back


def test_a_read_without_the_fence_decides_nothing() -> None:
    empty = KafkaGroup("g", KafkaGroupState.EMPTY, "", ())
    with pytest.raises(ValueError, match="no fence"):
        cutover_facts((GroupView("g"), GroupLayout()), empty, {}, admin_identity=True)
