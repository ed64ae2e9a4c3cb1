"""Rolling restart: pause and duplicates while each member of a group in turn is stopped cleanly and started
again, for a legacy group, a bridge group in each mode and a plain confluent-kafka group, in one run.

    python -m benchmarks.rolling_restart [--quick] [--zookeeper Z --bootstrap-servers B]

(`--quick` restarts only the first member of each group.)

Each group is 3 members x 2 streams on 8 partitions, every member in its own process (as deployed), under a
producer writing every partition every 10 ms. A member is stopped the way its process is stopped in a
rolling deploy: SIGTERM. The application then leaves its `for m in stream:` loop after the record in hand,
calls `commit_offsets()` and `shutdown()` (a plain consumer leaves its poll loop, commits and closes); a
new process takes its place. The plain group is the baseline. Each SIGTERM comes a random moment (uniform
over one heartbeat interval) after the previous step: a Kafka rebalance starts at the other members' next
heartbeat, whose phase the previous rebalance set, so a fixed delay would hand each group's leaves a phase of
their own and their pauses a difference that is the benchmark's, not the members'.

Each transition (a leave, triggered by the SIGTERM; a join, triggered when the new process asks to join) is
measured two ways from what was processed (`migrator.observe.pause`). Unprocessed (the goal's measure): the
longest any partition went with nobody processing it, among the gaps that ended in the transition's window
(from its trigger until every partition was processed again after the group converged, plus 0.3 s); the
longest gap outside every window is reported as the run's noise floor (`steady_max_unprocessed_s`).
Pause: from the trigger until every partition is processed again by its new owner, as in switch_pause.py;
it also counts time the old owners kept processing while the new member got ready. A restart is its leave
plus its join; a group's total is the sum over its restarts. Duplicates come from `migrator.observe.judge`
over everything produced and processed (with the owner nodes' timeline for the ZooKeeper-registered groups).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import (
    Cluster,
    Size,
    add_cluster_args,
    at_random_heartbeat_phase,
    close_group,
    cluster,
    group_driver,
    join,
    ratio,
    save,
)
from benchmarks.member_process import RemoteMember
from migrator.demo.group import wait_for
from migrator.demo.steps import GroupDriver, Step
from migrator.demo.workload import quiet_libraries
from migrator.observe import OwnersWatcher, judge
from migrator.observe.pause import longest_gap
from migrator.observe.records import Processed
from migrator.observe.verdict import Duplicate
from migrator.protocol.codecs import Mode

GOAL = 1.5  # a bridge group's total unprocessed time at most 1.5x the plain group's, with 0 duplicates
MEASURES = ("unprocessed_s", "pause_s")
GOAL_MEASURE = "unprocessed_s"
SIZE = Size(members=3, streams=2, partitions=8)
GROUPS = ("plain", "legacy", "bridge-zookeeper", "bridge-kafka")
BASELINE = "plain"
DRAIN_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Transition:
    """One leave or one join, by both measures (see the module docstring)."""

    at: str  # the trigger, UTC to the millisecond, to find the transition in the members' logs
    unprocessed_s: float | None  # the longest a partition went unprocessed (`longest_gap`)
    pause_s: float | None  # trigger to the last partition's resume (`pause_after`)
    longest: str  # which partition that was, and from when to when (UTC)


@dataclass(frozen=True)
class Restart:
    """One member's restart: its leave, then its replacement's join."""

    member: str
    leave: Transition
    join: Transition
    duplicates: int  # records processed again whose second processing began during this restart

    def total(self, measure: str) -> float | None:
        values = [getattr(self.leave, measure), getattr(self.join, measure)]
        return None if None in values else sum(values)


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
            at_random_heartbeat_phase()
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
    triggers = [t.trigger_ns for _m, left, joined in restarts for t in (left, joined)] + [end_ns]
    settle_ns = int(d.sizing.settle_s * 1e9)

    def settled(step: Step) -> int:
        """The end of a transition's window: every partition processed again after the group converged."""
        return step.trigger_ns + int(step.resumed_s * 1e9) + settle_ns

    def transition(step: Step) -> Transition:
        gap = longest_gap(processed, step.trigger_ns, settled(step))
        where = "" if gap is None else f"{gap.partition} from {utc(gap.from_ns)} to {utc(gap.to_ns)}"
        return Transition(utc(step.trigger_ns), None if gap is None else gap.seconds, step.pause_s, where)

    # Between one transition's window and the next trigger the group is steady: its longest gap there is
    # the noise floor (the machine's load), not a transition's doing.
    bounds = [settled(t) for _m, left, joined in restarts for t in (left, joined)]
    steady = [longest_gap(processed, since, until) for since, until in zip(bounds, triggers[1:], strict=True)]

    per_restart = duplicates_per_window(verdict.duplicates, triggers[::2])
    steps = [
        Restart(m, transition(left), transition(joined), n)
        for (m, left, joined), n in zip(restarts, per_restart, strict=True)
    ]
    out: dict[str, Any] = {"group": group, "restarts": [asdict(s) for s in steps]}
    for measure in MEASURES:
        totals = [s.total(measure) for s in steps]
        known = [t for t in totals if t is not None]
        out[f"total_{measure}"] = sum(known) if len(known) == len(totals) else None
        out[f"max_restart_{measure}"] = max(known) if len(known) == len(totals) else None
    out["steady_max_unprocessed_s"] = max((g.seconds for g in steady if g is not None), default=None)
    out["verdict"] = verdict.counts()
    out["verdict_summary"] = verdict.summary() if not verdict.ok or verdict.duplicates else ""
    return out


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def run(
    c: Cluster, quick: bool = False, log_dir: str | None = None, groups: tuple[str, ...] = GROUPS
) -> dict[str, Any]:
    quiet_libraries()
    groups = (BASELINE, *(g for g in groups if g != BASELINE))
    results = {g: roll(c, g, SIZE, 1 if quick else SIZE.members, log_dir) for g in groups}
    base = results[BASELINE]
    for g in groups:
        r = results[g]
        for measure in MEASURES:
            r[f"total_{measure}_ratio"] = ratio(r[f"total_{measure}"], base[f"total_{measure}"])
            r[f"max_restart_{measure}_ratio"] = ratio(r[f"max_restart_{measure}"], base[f"max_restart_{measure}"])
        dups = r["verdict"]["duplicates"]
        goal_ratio = r[f"total_{GOAL_MEASURE}_ratio"]
        r["goal_met"] = goal_ratio is not None and goal_ratio <= GOAL and dups == 0
        steps = ", ".join(
            f"{s['member']} {_rounded(s['leave'][GOAL_MEASURE])}+{_rounded(s['join'][GOAL_MEASURE])}s "
            f"(pause {_rounded(s['leave']['pause_s'])}+{_rounded(s['join']['pause_s'])}s) dup {s['duplicates']}"
            for s in r["restarts"]
        )
        goal = "" if g == BASELINE else f" (goal <= {GOAL}x and 0 duplicates: {'met' if r['goal_met'] else 'NOT met'})"
        print(f"rolling restart {g}: unprocessed {_rounded(r['total_unprocessed_s'])}s "
              f"({r['total_unprocessed_s_ratio']}x plain), pause {_rounded(r['total_pause_s'])}s "
              f"({r['total_pause_s_ratio']}x plain) [{steps}]; "
              f"duplicates {dups}, lost {r['verdict']['lost']}; steady gaps up to "
              f"{_rounded(r['steady_max_unprocessed_s'])}s{goal}")  # fmt: skip
        if r["verdict_summary"]:
            print(f"  verdict {g}: {r['verdict_summary']}")
    doc = {
        "definition": __doc__.strip().split("\n\n")[-1],
        "size": asdict(SIZE),
        "baseline": BASELINE,
        "goal": f"total {GOAL_MEASURE} <= {GOAL}x the {BASELINE} group's, 0 duplicates",
        "results": results,
    }
    print(f"saved {save('rolling_restart' + ('-quick' if quick else ''), doc)}")
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cluster_args(parser)
    parser.add_argument("--member-logs", metavar="DIR", help="write each connector's rebalance log here")
    parser.add_argument("--group", choices=GROUPS, action="append", help="only these groups (and the baseline)")
    args = parser.parse_args(argv)
    if args.member_logs:
        Path(args.member_logs).mkdir(parents=True, exist_ok=True)
    with cluster(args.zookeeper, args.bootstrap_servers) as c:
        run(c, args.quick, args.member_logs, tuple(args.group or GROUPS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
