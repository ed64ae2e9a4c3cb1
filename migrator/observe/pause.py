"""How long a transition stopped consumption, measured from what was processed. Pure functions.

A partition has resumed once its post-transition owner (the thread that processed its last record in the
observation) processes one of its records after the trigger. The pause of a transition is the latest resume
over all partitions, minus the trigger time. The same definition serves a mode switch and a plain Kafka
rebalance, so the two can be compared.
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
