"""Rolling restart: pause and duplicates while each member of a group in turn is stopped cleanly and started
again, for a legacy group, a bridge group in each mode and a plain confluent-kafka group, in one run.

    python benchmarks/rolling_restart.py [--quick] [--zookeeper Z --bootstrap-servers B]

(`--quick` restarts only the first member of each group.)

Each group is 3 members x 2 streams on 8 partitions, every member in its own process (as deployed), under a
producer writing every partition every 10 ms. A member is stopped the way its process is stopped in a
rolling deploy: SIGTERM. The application then leaves its `for m in stream:` loop after the record in hand,
calls `commit_offsets()` and `shutdown()` (a plain consumer leaves its poll loop, commits and closes); a
new process takes its place. Both transitions are measured with `migrator.observe.pause`, from the trigger
(the SIGTERM; the moment the new process asks to join) until every partition is processed again by its new
owner; a restart's pause is its leave's plus its join's, and a group's total is the sum over its members.
The plain group is the baseline. Duplicates come from `migrator.observe.judge` over everything produced and
processed (and, for the ZooKeeper-registered groups, the owner nodes' timeline).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (
    Cluster,
    Size,
    add_cluster_args,
    close_group,
    cluster,
    group_driver,
    join,
    quiet,
    ratio,
    save,
)
from benchmarks.member_process import RemoteMember
from migrator.demo.group import wait_for
from migrator.demo.steps import GroupDriver, Step
from migrator.observe import OwnersWatcher, judge
from migrator.observe.records import Processed
from migrator.observe.verdict import Duplicate
from migrator.zk.codecs import Mode

GOAL = 1.5  # a bridge group's total pause at most 1.5x the plain group's, with 0 duplicates
SIZE = Size(members=3, streams=2, partitions=8)
GROUPS = ("plain", "legacy", "bridge-zookeeper", "bridge-kafka")
BASELINE = "plain"
DRAIN_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Restart:
    """One member's restart: its leave, then its replacement's join."""

    member: str
    leave_at: str  # the triggers, UTC to the millisecond, to find the transition in the members' logs
    join_at: str
    leave_s: float | None
    join_s: float | None
    duplicates: int  # records processed again whose second processing began during this restart

    @property
    def pause_s(self) -> float | None:
        return None if self.leave_s is None or self.join_s is None else self.leave_s + self.join_s


def utc(ns: int) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(ns / 1e9)) + f".{ns // 1_000_000 % 1000:03d}"


def member_kind(group: str) -> str:
    return group.split("-", 1)[0]  # "plain", "legacy" or "bridge"


def leave(d: GroupDriver, name: str) -> int:
    """SIGTERM the member's process and wait until it has left; return when the signal was sent."""
    member = d.live[name]
    assert isinstance(member, RemoteMember)
    sent = member.terminate()
    d.stop(name)  # waits for the process to report that it stopped (and collects its error, if any)
    return sent


def duplicates_per_window(dups: list[Duplicate], bounds: list[int]) -> list[int]:
    """How many duplicates had their second processing start in each window [bounds[i], bounds[i+1])."""
    counts = [0] * (len(bounds) - 1)
    for d in dups:
        again = d.by[1].start_ns
        for i in range(len(counts)):
            if bounds[i] <= again < bounds[i + 1]:
                counts[i] += 1
    return counts


def wait_drained(d: GroupDriver, produced: set[tuple[str, int, int]], timeout_s: float) -> None:
    """Until every produced record has been processed by someone (the verdict then judges the whole run)."""

    def drained() -> bool:
        return not produced - {r.key for r in d.log.records()}

    wait_for(drained, timeout_s, "every produced record processed", interval_s=0.2)


def roll(c: Cluster, group: str, size: Size, restarted: int, log_dir: str | None) -> dict[str, Any]:
    """Start the group, restart its first `restarted` members one after the other, and judge the run."""
    print(f"== {group}: {size.members} members x {size.streams} streams on {size.partitions} partitions", flush=True)
    kind = member_kind(group)
    d, producer, _admin = group_driver(c, size, f"rolling-{group}", log_dir)
    watcher = OwnersWatcher(c.zookeeper, d.group).start() if kind != "plain" else None
    produced: set[tuple[str, int, int]] = set()
    restarts: list[tuple[str, Step, Step]] = []  # (member, its leave, its replacement's join)
    end_ns = 0
    try:
        producer.start()
        for i in range(size.members):
            d.start(kind, f"m{i}")
        wait_for(d.converged, 90.0, "the group to own every partition")
        since = time.time_ns()
        wait_for(lambda: len(d.log.resumed_since(since)) >= size.partitions, 60.0, "processing", 0.01)
        if group == "bridge-kafka":
            d.set_mode(Mode.KAFKA, "setup")
        for i in range(restarted):
            old, new = f"m{i}", f"m{i}r"
            left = d.step("restart", f"SIGTERM {old}", lambda old=old: leave(d, old))  # type: ignore[misc]
            joined = d.step("restart", f"{new} starts", lambda new=new: join(d, kind, new))  # type: ignore[misc]
            restarts.append((old, left, joined))
        end_ns = time.time_ns()
        produced = producer.stop()
        wait_drained(d, produced, DRAIN_TIMEOUT_S)
    finally:
        if not produced:
            producer.stop()
        try:
            close_group(d)
        finally:
            if watcher is not None:
                watcher.stop()
    processed: list[Processed] = d.log.records()
    verdict = judge(produced, processed, watcher.intervals() if watcher is not None else None)
    per_restart = duplicates_per_window(verdict.duplicates, [left.trigger_ns for _m, left, _j in restarts] + [end_ns])
    steps = [
        Restart(m, utc(left.trigger_ns), utc(joined.trigger_ns), left.pause_s, joined.pause_s, n)
        for (m, left, joined), n in zip(restarts, per_restart, strict=True)
    ]
    pauses = [s.pause_s for s in steps]
    total = None if any(p is None for p in pauses) else sum(p for p in pauses if p is not None)
    return {
        "group": group,
        "restarts": [{**asdict(s), "pause_s": s.pause_s} for s in steps],
        "total_pause_s": total,
        "max_restart_pause_s": None if total is None else max(p for p in pauses if p is not None),
        "verdict": verdict.counts(),
        "verdict_summary": verdict.summary() if not verdict.ok or verdict.duplicates else "",
    }


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def run(c: Cluster, quick: bool = False, log_dir: str | None = None) -> dict[str, Any]:
    quiet()
    results = {g: roll(c, g, SIZE, 1 if quick else SIZE.members, log_dir) for g in GROUPS}
    base = results[BASELINE]
    for g in GROUPS:
        r = results[g]
        r["total_ratio"] = ratio(r["total_pause_s"], base["total_pause_s"])
        r["max_restart_ratio"] = ratio(r["max_restart_pause_s"], base["max_restart_pause_s"])
        dups = r["verdict"]["duplicates"]
        r["goal_met"] = r["total_ratio"] is not None and r["total_ratio"] <= GOAL and dups == 0
        steps = ", ".join(
            f"{s['member']} {_rounded(s['leave_s'])}+{_rounded(s['join_s'])}s dup {s['duplicates']}"
            for s in r["restarts"]
        )
        goal = "" if g == BASELINE else f" (goal <= {GOAL}x and 0 duplicates: {'met' if r['goal_met'] else 'NOT met'})"
        print(f"rolling restart {g}: total pause {_rounded(r['total_pause_s'])}s [{steps}]; "
              f"duplicates {dups}, lost {r['verdict']['lost']}; {r['total_ratio']}x plain{goal}")  # fmt: skip
        if r["verdict_summary"]:
            print(f"  verdict {g}: {r['verdict_summary']}")
    doc = {
        "definition": __doc__.strip().split("\n\n")[-1],
        "size": asdict(SIZE),
        "baseline": BASELINE,
        "goal_total_ratio": GOAL,
        "results": results,
    }
    print(f"saved {save('rolling_restart' + ('-quick' if quick else ''), doc)}")
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cluster_args(parser)
    parser.add_argument("--member-logs", metavar="DIR", help="write each connector's rebalance log here")
    args = parser.parse_args(argv)
    if args.member_logs:
        Path(args.member_logs).mkdir(parents=True, exist_ok=True)
    with cluster(args.zookeeper, args.bootstrap_servers) as c:
        run(c, args.quick, args.member_logs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
