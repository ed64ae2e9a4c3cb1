"""Per-partition resumes and the producer's backlog over a transition, from the observer's records."""

from hypothesis import given
from hypothesis import strategies as st

from migrator.observe.pause import Resume, backlog, pause_after, resumes_after
from migrator.observe.records import Processed


def rec(p: int, offset: int, member: str, start_ms: int) -> Processed:
    return Processed(member, "0", "t", p, offset, start_ms * 1_000_000, start_ms * 1_000_000 + 1)


def test_each_partition_resumes_with_its_final_owner_and_names_who_took_it_first() -> None:
    processed = [
        rec(0, 1, "a", 5),  # before the trigger: ignored
        rec(0, 2, "a", 12),  # the old owner still draining: first after the trigger, not the resume
        rec(0, 3, "b", 40),  # the new owner resumes partition 0
        rec(1, 7, "c", 25),  # partition 1 keeps its owner
        rec(1, 8, "c", 50),
        rec(2, 1, "c", 90),  # after the window's end: absent
    ]
    assert resumes_after(10_000_000, processed, until_ns=80_000_000) == [
        Resume("t", 0, "a/0", "b/0", 40_000_000),
        Resume("t", 1, "c/0", "c/0", 25_000_000),
    ]


def test_backlog_is_what_was_produced_less_what_was_taken_duplicates_once() -> None:
    processed = [rec(0, 0, "a", 10), rec(0, 0, "b", 30), rec(0, 1, "a", 40), rec(1, 0, "a", 41)]
    produced = [(5_000_000, 2), (20_000_000, 3), (40_000_000, 3), (50_000_000, 4)]
    assert backlog(produced, processed) == [(5_000_000, 2), (20_000_000, 2), (40_000_000, 1), (50_000_000, 1)]


records = st.lists(
    st.builds(rec, st.integers(0, 3), st.integers(0, 5), st.sampled_from("abc"), st.integers(0, 100)), max_size=40
)


@given(records, st.integers(0, 100))
def test_the_pause_is_the_latest_partition_resume(processed: list[Processed], trigger_ms: int) -> None:
    resumed = resumes_after(trigger_ms * 1_000_000, processed)
    pause = pause_after(trigger_ms * 1_000_000, processed)
    assert (pause is None) == (not resumed)
    if pause is not None:
        assert pause.resumed_ns == max(r.resumed_ns for r in resumed)
        assert pause.partitions == len({r.partition for r in resumed}) == len(resumed)
    assert all(r.resumed_ns >= trigger_ms * 1_000_000 for r in resumed)
