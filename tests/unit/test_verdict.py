"""The observer's verdict on hand-made data: each check must catch exactly the problem it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrator.observe import (
    Commit,
    JsonlTail,
    OwnerInterval,
    Processed,
    ProcessingLog,
    claimed_below_commit,
    duplicates,
    judge,
    load_jsonl,
    lost,
    overlaps,
    owner_violations,
)

T = "t"


def rec(thread: str, partition: int, offset: int, start: int, end: int, member: str | None = None) -> Processed:
    return Processed(member or thread.rsplit("-", 1)[0], thread, T, partition, offset, start, end)


def own(thread: str, partition: int, start: int, end: int | None) -> OwnerInterval:
    return OwnerInterval(T, partition, thread, start, end)


# -- lost ------------------------------------------------------------------------------------------------
def test_lost_finds_unprocessed_records_as_pairs_or_triples() -> None:
    processed = [rec("a-0", 0, 0, 0, 1), rec("a-0", 0, 1, 1, 2), rec("a-0", 1, 0, 2, 3)]
    assert lost({(0, 0), (0, 1), (1, 0), (1, 1), (2, 5)}, processed) == [(1, 1), (2, 5)]
    assert lost({(T, 0, 0), (T, 0, 2), ("other", 0, 0)}, processed) == [("other", 0, 0), (T, 0, 2)]
    assert lost(set(), processed) == []


def test_nothing_lost_when_all_processed() -> None:
    assert lost({(0, 0), (0, 1)}, [rec("a-0", 0, 0, 0, 1), rec("b-0", 0, 1, 5, 6)]) == []


# -- duplicates ------------------------------------------------------------------------------------------
def test_duplicates_report_every_processing_in_start_order() -> None:
    first, second = rec("a-0", 3, 7, 10, 20), rec("b-1", 3, 7, 5, 8)
    found = duplicates([first, rec("a-0", 3, 8, 20, 30), second])
    assert len(found) == 1
    assert found[0].key == (T, 3, 7)
    assert found[0].by == (second, first)


def test_same_thread_twice_is_a_duplicate() -> None:
    assert len(duplicates([rec("a-0", 0, 1, 0, 1), rec("a-0", 0, 1, 2, 3)])) == 1


# -- overlaps --------------------------------------------------------------------------------------------
def test_two_threads_on_one_partition_at_once_overlap() -> None:
    a, b = rec("a-0", 0, 1, 100, 200), rec("b-0", 0, 2, 150, 160)
    found = overlaps([a, b, rec("c-0", 1, 1, 100, 200)])  # partition 1 is someone else's business
    assert [(o.first, o.second) for o in found] == [(a, b)]


def test_back_to_back_and_same_thread_do_not_overlap() -> None:
    handover = [rec("a-0", 0, 1, 100, 200), rec("b-0", 0, 2, 200, 300)]  # [start, end) touching
    same_thread = [rec("a-0", 1, 1, 0, 50), rec("a-0", 1, 2, 10, 60)]
    assert overlaps(handover + same_thread) == []


def test_restarted_member_with_same_thread_id_is_another_worker() -> None:
    old = rec("g_c1-0", 0, 5, 0, 100, member="g_c1@101")
    new = rec("g_c1-0", 0, 5, 50, 150, member="g_c1@202")
    assert len(overlaps([old, new])) == 1


def test_overlap_found_behind_a_long_record() -> None:
    long = rec("a-0", 0, 1, 0, 1000)
    found = overlaps([long, rec("a-0", 0, 2, 10, 20), rec("b-0", 0, 3, 900, 950)])
    assert [(o.first.thread_id, o.second.offset) for o in found] == [("a-0", 3)]


# -- owner violations ------------------------------------------------------------------------------------
def test_processing_inside_own_ownership_is_fine() -> None:
    timeline = [own("a-0", 0, 0, 1_000_000_000), own("b-0", 0, 1_000_000_000, None)]
    processed = [rec("a-0", 0, 1, 10, 20), rec("b-0", 0, 2, 2_000_000_000, 2_000_000_010)]
    assert owner_violations(timeline, processed) == []


def test_processing_without_ownership_is_a_violation() -> None:
    timeline = [own("a-0", 0, 0, 1_000_000_000), own("b-0", 0, 1_000_000_000, None)]
    late = rec("a-0", 0, 9, 1_500_000_000, 1_500_000_100)  # a-0 lost the node half a second before
    never = rec("c-0", 1, 0, 10, 20)  # nobody ever owned partition 1
    found = owner_violations(timeline, [late, never])
    assert [v.record for v in found] == [late, never]
    assert [iv.owner for iv in found[0].owners_then] == ["b-0"]
    assert found[1].owners_then == ()


def test_processing_straddling_the_end_of_ownership_is_a_violation() -> None:
    timeline = [own("a-0", 0, 0, 100_000_000)]
    assert len(owner_violations(timeline, [rec("a-0", 0, 1, 50_000_000, 150_000_000)])) == 1


def test_tolerance_covers_millisecond_ctime_rounding_only() -> None:
    timeline = [own("a-0", 0, 10_000_000, 20_000_000)]
    just_before = rec("a-0", 0, 1, 7_000_000, 8_000_000)  # 3 ms before the (floored) ctime
    assert owner_violations(timeline, [just_before]) == []
    assert len(owner_violations(timeline, [just_before], tolerance_ns=1_000_000)) == 1
    assert len(owner_violations(timeline, [rec("a-0", 0, 1, 1_000_000, 2_000_000)])) == 1


# -- the verdict -----------------------------------------------------------------------------------------
def test_verdict_ok_on_a_clean_handover() -> None:
    produced = {(0, 0), (0, 1)}
    processed = [rec("a-0", 0, 0, 0, 10), rec("b-0", 0, 1, 30, 40)]
    v = judge(produced, processed, [own("a-0", 0, 0, 20), own("b-0", 0, 25, None)], tolerance_ns=0)
    assert v.ok, v.summary()
    assert v.counts() == {
        "produced": 2, "processed": 2, "lost": 0, "duplicates": 0,
        "unexpected_duplicates": 0, "overlaps": 0, "owner_violations": 0,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("processed", "problem"),
    [
        ([rec("a-0", 0, 0, 0, 10)], "lost=1"),
        ([rec("a-0", 0, 0, 0, 10), rec("a-0", 0, 1, 10, 15), rec("b-0", 0, 1, 30, 40)], "unexpected_duplicates=1"),
        ([rec("a-0", 0, 0, 0, 10), rec("b-0", 0, 1, 5, 40)], "overlaps=1"),
        ([rec("a-0", 0, 0, 0, 10), rec("a-0", 0, 1, 30, 40)], "owner_violations=1"),
    ],
)
def test_verdict_fails_on_each_problem(processed: list[Processed], problem: str) -> None:
    v = judge({(0, 0), (0, 1)}, processed, [own("a-0", 0, 0, 20), own("b-0", 0, 25, None)], tolerance_ns=0)
    assert not v.ok
    assert problem in v.summary()


def test_allowed_duplicates_do_not_fail_the_verdict() -> None:
    processed = [rec("a-0", 0, 0, 0, 10), rec("b-0", 0, 0, 20, 30)]
    v = judge({(0, 0)}, processed, allow_duplicate=lambda d: d.key[2] >= 0)
    assert v.ok and len(v.duplicates) == 1 and not v.unexpected_duplicates
    assert not judge({(0, 0)}, processed).ok


# -- the processing log ----------------------------------------------------------------------------------
def test_log_round_trips_through_jsonl_and_survives_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    ticks = iter(range(100, 200))
    with ProcessingLog(path, clock=lambda: next(ticks)) as log:
        h = log.start("m", "m-0", T, 0, 5)
        assert log.in_flight() == [h]
        log.end(h)
        with log.processing("m", "m-1", T, 1, 6):
            pass
        assert log.in_flight() == []
    written = load_jsonl(path)
    assert written == [Processed("m", "m-0", T, 0, 5, 100, 101), Processed("m", "m-1", T, 1, 6, 102, 103)]
    with path.open("a") as f:
        f.write('{"member":"m","thread_id":"m-0","to')  # kill -9 mid-line
    assert load_jsonl(path) == written


def test_corruption_before_the_last_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    good = Processed("m", "m-0", T, 0, 5, 1, 2).to_json()
    path.write_text(f"{good}\n{{garbage\n{good}\n")
    with pytest.raises(ValueError, match=":2:"):
        load_jsonl(path)


def test_tail_returns_each_complete_line_once_and_waits_for_an_unterminated_one(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    tail = JsonlTail(path)
    assert tail.read() == []  # the member has not written yet
    a, b = Processed("m", "m-0", T, 0, 5, 1, 2), Processed("m", "m-1", T, 1, 6, 3, 4)
    line_b = b.to_json()
    path.write_text(f"{a.to_json()}\n{line_b[:10]}")
    assert tail.read() == [a]
    with path.open("a") as f:
        f.write(f"{line_b[10:]}\n")
    assert tail.read() == [b]
    assert tail.read() == []


def test_a_member_only_ownership_accepts_any_thread_of_that_member_and_no_other() -> None:
    """The stretch before an in-place rewrite the observer did not see: some thread of member `a` held it."""
    timeline = [OwnerInterval(T, 0, "a", 0, 1_000_000_000, member_only=True), own("a-1", 0, 1_000_000_000, None)]
    mine = [rec("a-0", 0, 1, 10, 20), rec("a-1", 0, 2, 30, 40), rec("a-1", 0, 3, 2_000_000_000, 2_000_000_010)]
    assert owner_violations(timeline, mine) == []
    others = [rec("ab-0", 0, 4, 10, 20), rec("b-0", 0, 5, 10, 20), rec("a-0", 0, 6, 2_000_000_000, 2_000_000_010)]
    assert [v.record for v in owner_violations(timeline, others)] == others


def Commit_(offset: int, mzxid: int) -> Commit:
    return Commit(T, 0, offset, mzxid)


# -- claimed_below_commit --------------------------------------------------------------------------------
def _handoff_to(claimer: str) -> tuple[list[Processed], list[OwnerInterval]]:
    """`g_ours-0` processes offsets 5..7 of partition 0 and lets go (owner node zxid 10, gone at t=100);
    `claimer`'s node is created with zxid 30 and it processes 5..8 again."""
    processed = [rec("g_ours-0", 0, o, 10 * o, 10 * o + 5) for o in (5, 6, 7)]
    processed += [rec(f"{claimer}-0", 0, o, 200 + o, 201 + o) for o in (5, 6, 7, 8)]
    ownership = [
        OwnerInterval(T, 0, "g_ours-0", 0, 100, czxid=10),
        OwnerInterval(T, 0, f"{claimer}-0", 150, None, czxid=30),
    ]
    return processed, ownership


def test_a_claimer_that_started_below_the_commit_it_claimed_after_is_explained() -> None:
    processed, ownership = _handoff_to("g_scala")
    commits = [Commit(T, 0, 5, mzxid=12), Commit(T, 0, 8, mzxid=20)]  # the releaser's 8 landed before zxid 30
    verdict = judge(
        {(0, o) for o in range(5, 9)}, processed, ownership, claimed_below_commit(commits, ownership, {"g_scala"})
    )
    assert len(verdict.duplicates) == 3 and verdict.ok, verdict.summary()


@pytest.mark.parametrize(
    ("claimers", "commits", "why"),
    [
        ({"g_other"}, [Commit_(8, 20)], "the claimer is not one that reads before it claims"),
        ({"g_scala"}, [Commit_(5, 12), Commit_(8, 31)], "the commit past the records came after the claim"),
        ({"g_scala"}, [Commit_(7, 20)], "the commit did not cover offset 7: the releaser's fault"),
        ({"g_scala"}, [], "no commit seen at all"),
    ],
)
def test_other_duplicates_stay_unexpected(claimers: set[str], commits: list[Commit], why: str) -> None:
    processed, ownership = _handoff_to("g_scala")
    verdict = judge(
        {(0, o) for o in range(5, 9)}, processed, ownership, claimed_below_commit(commits, ownership, claimers)
    )
    assert verdict.unexpected_duplicates, why
