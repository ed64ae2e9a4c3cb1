from hypothesis import given
from hypothesis import strategies as st

from migrator.observe.pause import (
    Movement,
    Split,
    backlog,
    backlog_from,
    first_starts,
    longest_gap,
    moves,
    pause_after,
    pauses,
    split,
)
from migrator.observe.records import Processed


def rec(p: int, offset: int, thread: str, start_ms: int) -> Processed:
    return Processed("m", thread, "t", p, offset, start_ms * 1_000_000, start_ms * 1_000_000 + 1)


def test_pause_is_the_latest_resume_by_the_final_owner() -> None:
    processed = [
        rec(0, 1, "a", 5),  # before the trigger: ignored
        rec(0, 2, "a", 12),  # old owner still draining after the trigger: not a resume
        rec(0, 3, "b", 40),  # new owner resumes partition 0 at 40 ms
        rec(1, 7, "c", 25),  # partition 1 keeps its owner: resumes at 25 ms
        rec(1, 8, "c", 50),
        rec(0, 4, "b", 60),
    ]
    p = pause_after(10_000_000, processed)
    assert p is not None
    assert p.partitions == 2
    assert p.seconds == 0.030


def test_window_without_every_partition_gives_none() -> None:
    processed = [rec(0, 1, "a", 20), rec(1, 1, "a", 120)]
    assert pauses([10_000_000, 100_000_000], processed, partitions=2) == [None, None]
    both = pauses([10_000_000], processed, partitions=2)
    assert both[0] is not None and both[0].seconds == 0.110


def span(p: int, thread: str, start_ms: int, end_ms: int) -> Processed:
    return Processed("m", thread, "t", p, start_ms, start_ms * 1_000_000, end_ms * 1_000_000)


def test_longest_gap_counts_only_time_nobody_processed_the_partition() -> None:
    processed = [
        span(0, "a", 0, 1),
        span(0, "a", 10, 11),  # the old owner keeps processing after the trigger (at 5 ms): no gap yet
        span(0, "b", 300, 301),  # the new owner resumes: 289 ms unprocessed
        span(1, "c", 0, 1),
        span(1, "c", 400, 401),  # resumes after the window: not this window's
    ]
    gap = longest_gap(processed, 5_000_000, 350_000_000)
    assert gap is not None and (gap.partition, gap.from_ns, gap.to_ns) == (0, 11_000_000, 300_000_000)
    assert gap.seconds == 0.289
    later = longest_gap(processed, 350_000_000)
    assert later is not None and (later.partition, later.seconds) == (1, 0.399)


def test_overlapping_records_make_no_gap() -> None:
    processed = [span(0, "a", 0, 100), span(0, "b", 50, 60), span(0, "a", 100, 101)]
    assert longest_gap(processed, 0) is None


@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1000), st.integers(0, 50)), min_size=2, max_size=40))
def test_a_gap_never_covers_an_instant_when_the_partition_was_processed(
    specs: list[tuple[int, int, int]],
) -> None:
    processed = [span(p, "a", start, start + length) for p, start, length in specs]
    gap = longest_gap(processed, 0)
    if gap is None:
        return
    assert gap.to_ns > gap.from_ns
    same = [r for r in processed if r.partition == gap.partition]
    assert not any(r.start_ns < gap.to_ns and r.end_ns > gap.from_ns for r in same)


def worked(member: str, p: int, start_ms: int) -> Processed:
    return Processed(member, "0", "t", p, start_ms, start_ms * 1_000_000, start_ms * 1_000_000 + 1)


def test_a_partition_stays_when_its_last_worker_before_the_trigger_resumes_it() -> None:
    processed = [
        worked("a", 0, 0), worked("a", 0, 90), worked("a", 0, 130),  # stays with a; one 80 ms gap after the trigger
        worked("a", 0, 210),
        worked("a", 1, 95), worked("a", 1, 120), worked("b", 1, 400),  # a drains, then b takes it: moved
        worked("b", 2, 300),  # nobody before the trigger (within the look-back): counted as moved
        worked("c", 3, 2), worked("a", 3, 50), worked("a", 3, 150),  # c before the look-back; 100 ms gap
    ]  # fmt: skip
    classified = {m.partition: m for m in moves(100_000_000, processed, 10_000_000)}
    assert {p: (m.before, m.after, m.movement) for p, m in classified.items()} == {
        0: ("a/0", "a/0", Movement.STAYING),
        1: ("a/0", "b/0", Movement.MOVED),
        2: (None, "b/0", Movement.MOVED),
        3: ("a/0", "a/0", Movement.STAYING),
    }
    assert split(100_000_000, processed, 10_000_000) == Split(staying=2, moved=2, staying_gap_s=0.1, moved_pause_s=0.3)


def test_the_staying_gap_ignores_gaps_of_moved_partitions_and_those_before_the_trigger() -> None:
    processed = [worked("a", 0, 0), worked("a", 0, 50), worked("a", 0, 110), worked("a", 1, 40),
                 worked("b", 1, 900)]  # fmt: skip
    assert split(100_000_000, processed, 0) == Split(1, 1, 0.06, 0.8)
    assert split(100_000_000, processed, 0, until_ns=105_000_000) == Split(0, 0, None, None)


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 5), st.integers(0, 100)), max_size=30),
       st.lists(st.integers(0, 120), max_size=10))  # fmt: skip
def test_the_backlog_from_first_starts_computed_once_is_the_backlog(
    specs: list[tuple[int, int, int]], sample_ms: list[int]
) -> None:
    processed = [worked("a", p, at) for p, _o, at in specs]
    processed = [Processed(r.member, r.thread_id, r.topic, r.partition, o, r.start_ns, r.end_ns)
                 for r, (_p, o, _at) in zip(processed, specs, strict=True)]  # fmt: skip
    produced = [(t * 1_000_000, i * 3) for i, t in enumerate(sorted(sample_ms))]
    starts = first_starts(processed)
    assert starts == sorted(starts) and len(starts) == len({r.key for r in processed})
    assert backlog_from(produced, starts) == backlog(produced, processed)
