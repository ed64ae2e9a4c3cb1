"""How long the embedded member's poll thread waits in poll: a queued call (a commit) waits that long at most."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from migrator.kafka.member import (
    BUSY_SLICE_S,
    BUSY_TAKES_PER_SLICE,
    FIRST_SLICE_S,
    LEAVING_SLICE_S,
    poll_wait,
    streams_busy,
)

IDLE_S = 0.2
slices = st.floats(min_value=FIRST_SLICE_S, max_value=IDLE_S)


@given(slice_s=slices, leaving=st.booleans())
def test_while_records_are_handed_out_a_commit_waits_a_busy_slice_at_most(slice_s: float, leaving: bool) -> None:
    wait, _after = poll_wait(slice_s, IDLE_S, leaving=leaving, busy=True)
    assert wait <= BUSY_SLICE_S


def test_an_idle_member_waits_whole_polls() -> None:
    assert poll_wait(IDLE_S, IDLE_S, leaving=False, busy=False) == (IDLE_S, IDLE_S)


@given(slice_s=slices, busy=st.booleans())
def test_the_slice_after_a_served_call_doubles_back_to_the_idle_wait(slice_s: float, busy: bool) -> None:
    _wait, after = poll_wait(slice_s, IDLE_S, leaving=False, busy=busy)
    assert after == min(slice_s * 2, IDLE_S)


@given(slice_s=slices, busy=st.booleans())
def test_a_shutting_down_member_waits_leaving_slices(slice_s: float, busy: bool) -> None:
    assert poll_wait(slice_s, IDLE_S, leaving=True, busy=busy) == (LEAVING_SLICE_S, slice_s)


@given(takes=st.integers(min_value=0, max_value=10_000), seconds=st.floats(min_value=0.001, max_value=60))
def test_busy_slices_wake_the_poll_thread_a_fraction_as_often_as_the_streams_take(takes: int, seconds: float) -> None:
    if streams_busy(takes, seconds):
        assert seconds / BUSY_SLICE_S * BUSY_TAKES_PER_SLICE <= takes


def test_a_trickle_of_records_keeps_whole_polls() -> None:
    assert not streams_busy(20, 1.0)  # 20 batches a second: a bridge the cost benchmark calls idle
    assert streams_busy(200, 1.0)
