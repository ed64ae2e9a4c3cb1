from migrator.observe.pause import pause_after, pauses
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
