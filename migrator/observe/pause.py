"""How long a transition stopped consumption, measured from what was processed. Pure functions.

A partition has resumed once its post-transition owner (the thread that processed its last record in the
observation) processes one of its records after the trigger. The pause of a transition is the latest resume
over all partitions, minus the trigger time. The same definition serves a mode switch and a plain Kafka
rebalance, so the two can be compared.

`longest_gap` answers a narrower question: how long one partition went with nobody processing it. It
does not count time after the trigger while the old owner kept processing (a joining member still
getting ready), which `pause_after` does, so it is the fairer figure when members differ in how long
they prepare before anything is taken from anyone.

`moves` and `split` judge a cooperative rebalance: a partition whose worker after the trigger is the one
that processed it last before it stayed, and should never have paused; the others moved.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from migrator.observe.records import Processed


@dataclass(frozen=True, slots=True)
class Pause:
    trigger_ns: int
    resumed_ns: int
    partitions: int

    @property
    def seconds(self) -> float:
        return (self.resumed_ns - self.trigger_ns) / 1e9


@dataclass(frozen=True, slots=True)
class Resume:
    """When one partition resumed after a trigger: `resumed_ns` is the first record of its post-transition
    owner `resumed_by` (member/thread); `first_by` processed its first record after the trigger (the old
    owner still draining, or the new one)."""

    topic: str
    partition: int
    first_by: str
    resumed_by: str
    resumed_ns: int


def resumes_after(trigger_ns: int, processed: Iterable[Processed], until_ns: int | None = None) -> list[Resume]:
    """Each partition's resume after `trigger_ns`, among records started before `until_ns`, by partition; a
    partition with no record in that window is absent."""
    window = sorted(
        (r for r in processed if r.start_ns >= trigger_ns and (until_ns is None or r.start_ns < until_ns)),
        key=lambda r: r.start_ns,
    )
    first_by: dict[tuple[str, int], str] = {}
    final_owner: dict[tuple[str, int], str] = {}
    for r in window:
        first_by.setdefault((r.topic, r.partition), f"{r.member}/{r.thread_id}")
        final_owner[(r.topic, r.partition)] = f"{r.member}/{r.thread_id}"
    resumed: dict[tuple[str, int], int] = {}
    for r in window:
        tp = (r.topic, r.partition)
        if tp not in resumed and final_owner[tp] == f"{r.member}/{r.thread_id}":
            resumed[tp] = r.start_ns
    return [Resume(t, p, first_by[(t, p)], final_owner[(t, p)], ns) for (t, p), ns in sorted(resumed.items())]


def pause_after(trigger_ns: int, processed: Iterable[Processed], until_ns: int | None = None) -> Pause | None:
    """The pause of one transition triggered at `trigger_ns`, looking at records started before `until_ns`
    (the next trigger); None when some partition saw no record in that window."""
    resumed = resumes_after(trigger_ns, processed, until_ns)
    if not resumed:
        return None
    return Pause(trigger_ns, max(r.resumed_ns for r in resumed), len(resumed))


@dataclass(frozen=True, slots=True)
class Gap:
    """Nobody processed (topic, partition) from `from_ns` (the end of a record) to `to_ns` (the start of
    that partition's next record, by whoever processed it)."""

    topic: str
    partition: int
    from_ns: int
    to_ns: int

    @property
    def seconds(self) -> float:
        return (self.to_ns - self.from_ns) / 1e9


def longest_gap(processed: Iterable[Processed], since_ns: int, until_ns: int | None = None) -> Gap | None:
    """The longest time a partition went unprocessed, among the gaps that ended in [since_ns, until_ns)
    (a gap belongs to the window in which processing resumed); None when none did.

    Records of one partition are taken in start order; a gap runs from the latest end so far to the next
    start, so overlapping records (two owners at once, a record processed twice) never make one."""
    by_tp: dict[tuple[str, int], list[Processed]] = {}
    for r in processed:
        if until_ns is None or r.start_ns < until_ns:
            by_tp.setdefault((r.topic, r.partition), []).append(r)
    longest: Gap | None = None
    for (topic, partition), rs in by_tp.items():
        rs.sort(key=lambda r: r.start_ns)
        busy_until = rs[0].end_ns
        for r in rs[1:]:
            idle = r.start_ns - busy_until
            if r.start_ns >= since_ns and idle > 0 and (longest is None or idle > longest.to_ns - longest.from_ns):
                longest = Gap(topic, partition, busy_until, r.start_ns)
            busy_until = max(busy_until, r.end_ns)
    return longest


def pauses(triggers: Sequence[int], processed: Sequence[Processed], partitions: int) -> list[Pause | None]:
    """One pause per trigger, each window ending at the next trigger; a window where fewer than
    `partitions` partitions resumed gives None (it did not fully resume before the next trigger)."""
    out: list[Pause | None] = []
    for i, t in enumerate(triggers):
        until = triggers[i + 1] if i + 1 < len(triggers) else None
        p = pause_after(t, processed, until)
        out.append(p if p is not None and p.partitions >= partitions else None)
    return out


def backlog(produced: Sequence[tuple[int, int]], processed: Iterable[Processed]) -> list[tuple[int, int]]:
    """Records produced but not yet taken for processing, at each (time_ns, produced so far) sample of a
    producer: the produced count less the distinct records whose first processing started by then."""
    return backlog_from(produced, first_starts(processed))


def first_starts(processed: Iterable[Processed]) -> list[int]:
    """When each distinct record was first taken for processing, sorted: what `backlog_from` counts (computed
    once for many transitions of one observation)."""
    first: dict[tuple[str, int, int], int] = {}
    for r in processed:
        key = (r.topic, r.partition, r.offset)
        first[key] = min(first.get(key, r.start_ns), r.start_ns)
    return sorted(first.values())


def backlog_from(produced: Sequence[tuple[int, int]], starts: Sequence[int]) -> list[tuple[int, int]]:
    """`backlog` from the sorted `first_starts` of the observation."""
    return [(t, n - bisect.bisect_right(starts, t)) for t, n in produced]


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "median_s": statistics.median(values) if values else float("nan"),
        "max_s": max(values) if values else float("nan"),
        "min_s": min(values) if values else float("nan"),
    }


class Movement(StrEnum):
    """Whether a partition's worker after a transition is the one that processed it last before it."""

    STAYING = "staying"
    MOVED = "moved"


@dataclass(frozen=True, slots=True)
class Move:
    """One partition across a trigger: `before` processed its last record started before the trigger
    (None: no record in the look-back), `after` resumed it (see `Resume`)."""

    topic: str
    partition: int
    before: str | None
    after: str
    movement: Movement
    resumed_ns: int


def moves(trigger_ns: int, processed: Iterable[Processed], since_ns: int, until_ns: int | None = None) -> list[Move]:
    """Each resumed partition classified as staying (same member/thread before and after the trigger) or
    moved, the worker before being the last one to start a record in [since_ns, trigger_ns). A partition
    with no record in that look-back counts as moved: nothing shows that it stayed."""
    records = list(processed)
    last: dict[tuple[str, int], tuple[int, str]] = {}
    for r in records:
        if since_ns <= r.start_ns < trigger_ns:
            key, worker = (r.topic, r.partition), f"{r.member}/{r.thread_id}"
            if key not in last or r.start_ns >= last[key][0]:
                last[key] = (r.start_ns, worker)
    out = []
    for resume in resumes_after(trigger_ns, records, until_ns):
        before = last.get((resume.topic, resume.partition), (0, None))[1]
        movement = Movement.STAYING if before == resume.resumed_by else Movement.MOVED
        out.append(Move(resume.topic, resume.partition, before, resume.resumed_by, movement, resume.resumed_ns))
    return out


@dataclass(frozen=True, slots=True)
class Split:
    """A transition seen per movement: how many partitions stayed and moved, the longest time a staying one
    went unprocessed (`longest_gap` over the staying partitions only, gaps ending after the trigger), and the
    pause of the moved ones (the latest resume of a moved partition, after the trigger)."""

    staying: int
    moved: int
    staying_gap_s: float | None
    moved_pause_s: float | None


def split(trigger_ns: int, processed: Sequence[Processed], since_ns: int, until_ns: int | None = None) -> Split:
    """`moves` summed up: the figures a cooperative rebalance is judged by."""
    classified = moves(trigger_ns, processed, since_ns, until_ns)
    staying = {(m.topic, m.partition) for m in classified if m.movement is Movement.STAYING}
    moved = [m.resumed_ns for m in classified if m.movement is Movement.MOVED]
    gap = longest_gap(
        (r for r in processed if r.start_ns >= since_ns and (r.topic, r.partition) in staying), trigger_ns, until_ns
    )
    return Split(
        len(staying),
        len(moved),
        round(gap.seconds, 4) if gap is not None else None,
        round((max(moved) - trigger_ns) / 1e9, 4) if moved else None,
    )
