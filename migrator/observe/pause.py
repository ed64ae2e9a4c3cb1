"""How long a transition stopped consumption, measured from what was processed. Pure functions.

A partition has resumed once its post-transition owner (the thread that processed its last record in the
observation) processes one of its records after the trigger. The pause of a transition is the latest resume
over all partitions, minus the trigger time. The same definition serves a mode switch and a plain Kafka
rebalance, so the two can be compared.

`longest_gap` answers a narrower question: how long one partition went with nobody processing it. It
does not count time after the trigger while the old owner kept processing (a joining member still
getting ready), which `pause_after` does, so it is the fairer figure when members differ in how long
they prepare before anything is taken from anyone.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from migrator.observe.records import Processed


@dataclass(frozen=True, slots=True)
class Pause:
    trigger_ns: int
    resumed_ns: int
    partitions: int

    @property
    def seconds(self) -> float:
        return (self.resumed_ns - self.trigger_ns) / 1e9


def pause_after(trigger_ns: int, processed: Iterable[Processed], until_ns: int | None = None) -> Pause | None:
    """The pause of one transition triggered at `trigger_ns`, looking at records started before `until_ns`
    (the next trigger); None when some partition saw no record in that window."""
    window = sorted(
        (r for r in processed if r.start_ns >= trigger_ns and (until_ns is None or r.start_ns < until_ns)),
        key=lambda r: r.start_ns,
    )
    final_owner: dict[tuple[str, int], str] = {}
    for r in window:
        final_owner[(r.topic, r.partition)] = f"{r.member}/{r.thread_id}"
    resumed: dict[tuple[str, int], int] = {}
    for r in window:
        tp = (r.topic, r.partition)
        if tp not in resumed and final_owner[tp] == f"{r.member}/{r.thread_id}":
            resumed[tp] = r.start_ns
    if not resumed:
        return None
    return Pause(trigger_ns, max(resumed.values()), len(resumed))


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


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "median_s": statistics.median(values) if values else float("nan"),
        "max_s": max(values) if values else float("nan"),
        "min_s": min(values) if values else float("nan"),
    }
