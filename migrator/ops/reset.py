"""`offsets reset`: move a stopped group's committed offsets, with `kafka-consumer-groups --reset-offsets`
semantics (to earliest, latest, a datetime, an offset, or shifted by N).

Every new offset is clamped into [log start, log end], as kafka-consumer-groups does, so a reset can never
point past the data or at records already deleted. The plan is pure; the command reads the bounds and the
current offsets, shows the plan, and writes it only with --execute, after refusing a group with live
members (they would overwrite the reset with their next commit).
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from dataclasses import dataclass

from migrator.errors import UsageError
from migrator.protocol.partition import TopicPartition


class ResetKind(enum.Enum):
    EARLIEST = "to-earliest"
    LATEST = "to-latest"
    DATETIME = "to-datetime"
    OFFSET = "to-offset"
    SHIFT_BY = "shift-by"


@dataclass(frozen=True)
class ResetSpec:
    """Where to move: `value` is the offset (OFFSET), N (SHIFT_BY) or epoch milliseconds (DATETIME)."""

    kind: ResetKind
    value: int = 0


@dataclass(frozen=True)
class Bounds:
    """What the brokers say about the partitions: log start, log end, and (DATETIME) the offset for the time."""

    earliest: Mapping[TopicPartition, int]
    latest: Mapping[TopicPartition, int]
    for_time: Mapping[TopicPartition, int]


@dataclass(frozen=True)
class ResetRow:
    partition: TopicPartition
    current: int | None
    new: int


def parse_datetime(text: str) -> int:
    """Epoch milliseconds of an ISO 8601 date-time (`2026-11-25T10:00:00`, `...Z`, `...+01:00`); a time
    without a zone is UTC (kafka-consumer-groups takes the local zone; a jump host's zone is a trap)."""
    try:
        when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--to-datetime {text!r}: expected ISO 8601, e.g. 2026-11-25T10:00:00Z") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def _target(spec: ResetSpec, tp: TopicPartition, current: int | None, bounds: Bounds) -> int:
    if spec.kind is ResetKind.EARLIEST:
        return bounds.earliest[tp]
    if spec.kind is ResetKind.LATEST:
        return bounds.latest[tp]
    if spec.kind is ResetKind.OFFSET:
        return spec.value
    if spec.kind is ResetKind.DATETIME:
        found = bounds.for_time.get(tp, -1)
        return bounds.latest[tp] if found < 0 else found
    if current is None:
        raise UsageError(f"--shift-by: {tp} has no committed offset to shift; use --to-offset or --to-earliest")
    return current + spec.value


def reset_plan(
    spec: ResetSpec, partitions: list[TopicPartition], current: Mapping[TopicPartition, int], bounds: Bounds
) -> list[ResetRow]:
    """The new offset of every partition, clamped into [log start, log end]."""
    rows = []
    for tp in sorted(partitions):
        if tp not in bounds.earliest or tp not in bounds.latest:
            raise UsageError(f"{tp}: the brokers gave no log start/end (no leader?); nothing was written")
        target = _target(spec, tp, current.get(tp), bounds)
        rows.append(ResetRow(tp, current.get(tp), min(max(target, bounds.earliest[tp]), bounds.latest[tp])))
    return rows


def parse_topic_partitions(value: str) -> tuple[str, tuple[int, ...]]:
    """`topic` or `topic:0,2` (kafka-consumer-groups' --topic form): the topic and the chosen partitions (() = all)."""
    topic, sep, parts = value.partition(":")
    if not sep:
        return topic, ()
    try:
        chosen = tuple(sorted({int(p) for p in parts.split(",")}))
    except ValueError:
        raise UsageError(f"--topic {value!r}: expected TOPIC or TOPIC:PARTITION[,PARTITION...]") from None
    if any(p < 0 for p in chosen):
        raise UsageError(f"--topic {value!r}: partitions are non-negative")
    return topic, chosen
