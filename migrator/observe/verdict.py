"""The verdict over what was produced, what was processed and who owned what. Pure functions only.

Identity of a record is (topic, partition, offset); who processed it is (member, thread_id), so a member
restarted with the same consumer.id counts as a different worker.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from migrator.observe.commits import Commit
from migrator.observe.owners import OwnerInterval
from migrator.observe.records import Processed

RecordKey = tuple[str, int, int]
"""(topic, partition, offset)."""

DEFAULT_TOLERANCE_NS = 5_000_000
"""Slack for `owner_violations`: ZooKeeper's ctime has millisecond resolution (floor) and the processes read
the same host clock, so 5 ms covers rounding only. Raise it for clocks on different hosts."""


@dataclass(frozen=True, slots=True)
class Duplicate:
    key: RecordKey
    by: tuple[Processed, ...]  # every processing of that record, in start order


@dataclass(frozen=True, slots=True)
class Overlap:
    """Two different workers processing the same partition at overlapping times: dual processing."""

    topic: str
    partition: int
    first: Processed
    second: Processed


@dataclass(frozen=True, slots=True)
class OwnerViolation:
    """`record` was processed while the owners timeline did not show its thread owning the partition."""

    record: Processed
    owners_then: tuple[OwnerInterval, ...]  # the intervals of that partition overlapping the record


def _project(processed: Iterable[Processed], two_tuple: bool) -> set[tuple]:
    return {(r.partition, r.offset) if two_tuple else r.key for r in processed}


def lost(produced: Collection[tuple], processed: Iterable[Processed]) -> list[tuple]:
    """Produced records nobody processed, sorted. `produced` holds (topic, partition, offset) triples or, for
    a one-topic run, (partition, offset) pairs."""
    if not produced:
        return []
    two = len(next(iter(produced))) == 2
    done = _project(processed, two)
    return sorted(k for k in produced if tuple(k) not in done)


def duplicates(processed: Iterable[Processed]) -> list[Duplicate]:
    """Records processed more than once (by anyone, including the same thread twice), by key."""
    by_key: dict[RecordKey, list[Processed]] = defaultdict(list)
    for r in processed:
        by_key[r.key].append(r)
    return [
        Duplicate(key, tuple(sorted(rs, key=lambda r: r.start_ns))) for key, rs in sorted(by_key.items()) if len(rs) > 1
    ]


def overlaps(processed: Iterable[Processed]) -> list[Overlap]:
    """Pairs of records of one partition whose processing intervals intersect, by two different workers.

    Intervals are closed-open [start, end): one thread ending a record in the same nanosecond another
    starts is sequential. A sweep per partition keeps only the intervals still running.
    """
    by_tp: dict[tuple[str, int], list[Processed]] = defaultdict(list)
    for r in processed:
        by_tp[(r.topic, r.partition)].append(r)
    found: list[Overlap] = []
    for (topic, partition), rs in sorted(by_tp.items()):
        rs.sort(key=lambda r: (r.start_ns, r.end_ns))
        active: list[Processed] = []
        for r in rs:
            active = [a for a in active if a.end_ns > r.start_ns]
            found.extend(Overlap(topic, partition, a, r) for a in active if a.worker != r.worker)
            active.append(r)
    return found


def owner_violations(
    ownership: Iterable[OwnerInterval], processed: Iterable[Processed], tolerance_ns: int = DEFAULT_TOLERANCE_NS
) -> list[OwnerViolation]:
    """Records whose whole processing interval is not inside one ownership interval of their own thread.

    A record [s, e] by thread T on p is fine when some interval of p owned by T satisfies
    start - tolerance <= s and e <= end + tolerance (a live interval has no end). Only the thread id is
    compared, since that is what the owner node holds (for a `member_only` interval, its consumer id).
    """
    by_tp: dict[tuple[str, int], list[OwnerInterval]] = defaultdict(list)
    for iv in ownership:
        by_tp[(iv.topic, iv.partition)].append(iv)
    found: list[OwnerViolation] = []
    for r in processed:
        ivs = by_tp.get((r.topic, r.partition), [])
        if any(_held_during(iv, r, tolerance_ns) for iv in ivs):
            continue
        then = tuple(iv for iv in ivs if iv.start_ns <= r.end_ns and (iv.end_ns is None or iv.end_ns >= r.start_ns))
        found.append(OwnerViolation(r, then))
    return found


def _held_during(iv: OwnerInterval, r: Processed, tolerance_ns: int) -> bool:
    """Whether `iv` is an ownership of `r`'s thread that covers `r`'s whole processing, give or take."""
    return (
        iv.held_by(r.thread_id)
        and iv.start_ns - tolerance_ns <= r.start_ns
        and (iv.end_ns is None or r.end_ns <= iv.end_ns + tolerance_ns)
    )


@dataclass(frozen=True)
class Verdict:
    """Everything found; `ok` when nothing is lost, no duplicate is unexpected, nothing overlaps and no record
    was processed outside its thread's ownership."""

    produced: int
    processed: int
    lost: list[tuple] = field(default_factory=list)
    duplicates: list[Duplicate] = field(default_factory=list)
    unexpected_duplicates: list[Duplicate] = field(default_factory=list)
    overlaps: list[Overlap] = field(default_factory=list)
    owner_violations: list[OwnerViolation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.unexpected_duplicates or self.overlaps or self.owner_violations)

    def counts(self) -> dict[str, int]:
        return {
            "produced": self.produced,
            "processed": self.processed,
            "lost": len(self.lost),
            "duplicates": len(self.duplicates),
            "unexpected_duplicates": len(self.unexpected_duplicates),
            "overlaps": len(self.overlaps),
            "owner_violations": len(self.owner_violations),
        }

    def summary(self, examples: int = 3) -> str:
        """One line of counts plus a few examples of each problem: what an assertion message should say."""
        parts = [", ".join(f"{k}={v}" for k, v in self.counts().items())]
        if self.lost:
            parts.append(f"lost e.g. {self.lost[:examples]}")
        for d in self.unexpected_duplicates[:examples]:
            parts.append(f"duplicate {d.key} by {[(r.member, r.thread_id) for r in d.by]}")
        for o in self.overlaps[:examples]:
            parts.append(
                f"overlap {o.topic}-{o.partition}: {o.first.thread_id}@{o.first.offset} "
                f"[{o.first.start_ns}, {o.first.end_ns}) vs {o.second.thread_id}@{o.second.offset} "
                f"[{o.second.start_ns}, {o.second.end_ns})"
            )
        for v in self.owner_violations[:examples]:
            r = v.record
            parts.append(
                f"owner violation {r.topic}-{r.partition}@{r.offset} by {r.thread_id} [{r.start_ns}, {r.end_ns}) "
                f"while owners were {[(iv.owner, iv.start_ns, iv.end_ns) for iv in v.owners_then]}"
            )
        return "; ".join(parts)

    def __str__(self) -> str:
        return self.summary()


def judge(
    produced: Collection[tuple],
    processed: Sequence[Processed],
    ownership: Iterable[OwnerInterval] | None = None,
    allow_duplicate: Callable[[Duplicate], bool] | None = None,
    tolerance_ns: int = DEFAULT_TOLERANCE_NS,
) -> Verdict:
    """All checks at once. Without `ownership` the owner check is skipped; `allow_duplicate` says which
    duplicates are expected (e.g. after a crash, records after the dead member's last commit)."""
    dups = duplicates(processed)
    return Verdict(
        produced=len(produced),
        processed=len(processed),
        lost=lost(produced, processed),
        duplicates=dups,
        unexpected_duplicates=[d for d in dups if allow_duplicate is None or not allow_duplicate(d)],
        overlaps=overlaps(processed),
        owner_violations=owner_violations(ownership, processed, tolerance_ns) if ownership is not None else [],
    )


def after_commit(committed: Mapping[int, int], member_prefix: str) -> Callable[[Duplicate], bool]:
    """Duplicates a crash or expiry may cause: only on the affected member's partitions, only at or above the
    offset committed when it failed, and only where that member was one of the processors."""

    def allowed(d: Duplicate) -> bool:
        _topic, partition, offset = d.key
        return (
            partition in committed
            and offset >= committed[partition]
            and any(r.member.startswith(member_prefix) for r in d.by)
        )

    return allowed


def claimed_below_commit(
    commits: Iterable[Commit],
    ownership: Iterable[OwnerInterval],
    claimers: Collection[str],
    tolerance_ns: int = DEFAULT_TOLERANCE_NS,
) -> Callable[[Duplicate], bool]:
    """Duplicates that the claiming member alone caused: every processing after the first was by a thread
    of one of `claimers` (consumer ids) under an owner node created after a commit past that record was
    already written. The releaser committed before it let go; the claimer started below the commit.

    The Scala `ZookeeperConsumerConnector` does this: it fetches a partition's offset before it creates
    the owner node, so a releaser's commit and delete that both land in between go unseen. Our connector
    fetches only once the previous owner's node is gone, so its members must never be `claimers`.
    """
    by_tp: dict[tuple[str, int], list[Commit]] = defaultdict(list)
    for c in commits:
        by_tp[(c.topic, c.partition)].append(c)
    intervals: dict[tuple[str, int], list[OwnerInterval]] = defaultdict(list)
    for iv in ownership:
        intervals[(iv.topic, iv.partition)].append(iv)
    prefixes = tuple(f"{cid}-" for cid in claimers)

    def committed_before(topic: str, partition: int, zxid: int) -> int | None:
        earlier = [c for c in by_tp[(topic, partition)] if c.mzxid < zxid]
        return max(earlier, key=lambda c: c.mzxid).offset if earlier else None

    def explained(r: Processed) -> bool:
        if not r.thread_id.startswith(prefixes):
            return False
        for iv in intervals[(r.topic, r.partition)]:
            inside = iv.start_ns - tolerance_ns <= r.start_ns and (
                iv.end_ns is None or r.end_ns <= iv.end_ns + tolerance_ns
            )
            if iv.held_by(r.thread_id) and inside and iv.czxid:
                committed = committed_before(r.topic, r.partition, iv.czxid)
                return committed is not None and committed > r.offset
        return False

    def allowed(d: Duplicate) -> bool:
        return all(explained(r) for r in d.by[1:])

    return allowed
