"""Where a fenced group stands, as `status` and `groups` show it: decided by the one cut-over rule
(`is_cut_over`), then by whether a Kafka consumer joined or committed past the carried offsets."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from migrator.protocol.codecs import ModeNode, Registration
from migrator.protocol.cutover import CutoverState, cutover_state, is_cut_over
from migrator.protocol.group import Group
from migrator.protocol.group_view import Fence, GroupView, Member
from migrator.protocol.kafka import KafkaGroup, KafkaGroupState, KafkaMember
from migrator.protocol.partition import TopicPartition as TP

CARRIED = {TP("t", 0): 7, TP("t", 1): 7}


def group(
    fence: Fence | None, *, mode_kafka: bool = True, legacy: int = 0, joined: int = 0, committed: int = 7,
    kafka_read: bool = True,
) -> Group:  # fmt: skip
    members = tuple(Member(f"l{i}", Registration({"t": 1}, timestamp_ms=1), 0, False) for i in range(legacy))
    view = GroupView("g", members=members, mode=ModeNode.decode(b"kafka" if mode_kafka else b"zookeeper"),
                     offsets=CARRIED, fence=fence)  # fmt: skip
    kafka_members = tuple(KafkaMember(f"k{i}", f"k{i}", "/h", None, ()) for i in range(joined))
    kafka = KafkaGroup("g", KafkaGroupState.STABLE if joined else KafkaGroupState.EMPTY, "range", kafka_members)
    return Group(view, kafka if kafka_read else None, kafka_committed={TP("t", 0): committed, TP("t", 1): 7})


FENCED = Fence(ids_exists=True, members_can_create=False)


def test_a_cut_over_group_waits_for_its_kafka_consumers_until_one_joins_or_commits_past_the_carried_offsets() -> None:
    assert cutover_state(group(FENCED), 0) is CutoverState.WAITING
    assert cutover_state(group(FENCED, joined=1), 0) is CutoverState.STARTED
    assert cutover_state(group(FENCED, committed=8), 0) is CutoverState.STARTED
    assert cutover_state(group(FENCED, kafka_read=False), 0) is CutoverState.KAFKA_UNCHECKED


def test_a_fence_without_the_rest_of_the_cutover_is_unfinished_and_no_fence_is_no_cutover() -> None:
    assert cutover_state(group(FENCED, mode_kafka=False), 0) is CutoverState.UNDER_WAY
    assert cutover_state(group(FENCED, legacy=1), 0) is CutoverState.UNDER_WAY
    assert cutover_state(group(FENCED), owner_nodes=1) is CutoverState.UNDER_WAY
    assert cutover_state(group(Fence(ids_exists=True, members_can_create=True)), 0) is None
    assert cutover_state(group(None), 0) is None  # the fence was not read


@given(
    st.sampled_from([FENCED, Fence(True, True), Fence(False, True)]),
    st.booleans(), st.integers(0, 2), st.integers(0, 2), st.integers(0, 2),
)  # fmt: skip
def test_status_says_cut_over_exactly_when_the_cutover_rule_does(
    fence: Fence, mode_kafka: bool, legacy: int, owner_nodes: int, joined: int
) -> None:
    read = group(fence, mode_kafka=mode_kafka, legacy=legacy, joined=joined)
    state = cutover_state(read, owner_nodes)
    cut_over = state in (CutoverState.WAITING, CutoverState.STARTED, CutoverState.KAFKA_UNCHECKED)
    assert cut_over == is_cut_over(read, fence, owner_nodes)
