"""`migrator status`: one picture of a group in the middle of a migration, with warnings in words.

`build_report` is pure (GroupView + KafkaGroup + offsets → StatusReport) so every warning is unit-tested
without a cluster; `read_status` is the thin reader around it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from kazoo.client import KazooClient

from migrator.assign.legacy import ASSIGNORS, context_from_subscriptions
from migrator.assign.model import consumer_of_thread
from migrator.coordination.authority import KafkaHealth, decide_authority
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.protocol.codecs import Authority, Mode
from migrator.protocol.group_view import GroupView
from migrator.protocol.kafka import KafkaGroup
from migrator.protocol.partition import TopicPartition
from migrator.table import align
from migrator.zk.group_reader import read_group

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BridgeRow:
    consumer_id: str
    authority: str | None
    generation: int | None
    age_s: float | None
    in_kafka_group: bool | None
    owned_partitions: int
    held: bool = False
    """It holds nothing: falling back to ZooKeeper would overlap plain Kafka consumers (its reason says why)."""


@dataclass(frozen=True, slots=True)
class KafkaConsumerRow:
    member_id: str
    client_id: str
    host: str
    partitions: int


@dataclass(frozen=True, slots=True)
class PartitionRow:
    topic: str
    partition: int
    owner: str | None
    expected_owner: str | None
    zk_offset: int | None
    kafka_offset: int | None
    log_end: int | None
    lag: int | None


@dataclass(frozen=True, slots=True)
class StatusReport:
    group: str
    exists: bool
    mode: str
    """`absent`, `kafka`, `zookeeper` or `unknown`."""
    mode_raw: str | None
    expected_authority: str
    legacy: tuple[str, ...]
    bridges: tuple[BridgeRow, ...]
    kafka_consumers: tuple[KafkaConsumerRow, ...]
    corrupt: tuple[tuple[str, str], ...]
    kafka_state: str | None
    kafka_assignor: str | None
    owners_agree: bool | None
    agreement_basis: str
    partitions: tuple[PartitionRow, ...]
    warnings: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _mode_word(view: GroupView) -> str:
    if not view.mode.exists:
        return "absent"
    return "unknown" if view.mode.is_unknown else str(view.mode.raw)


def expected_authority(view: GroupView, kafka: KafkaGroup | None) -> Authority:
    """The authority the bridges' own rule (CONTRACT §5) gives now, Kafka health judged from DescribeGroups
    (unknown without it): a member that does not decode counts as a legacy one, and no bridge means no one
    joined the Kafka group."""
    bridges = frozenset(b.consumer_id for b in view.bridges)
    missing = bridges - kafka.client_ids if kafka is not None else frozenset()
    health = KafkaHealth(joined=bool(bridges), reason="no bridge is registered", missing_bridges=missing)
    return decide_authority(view.mode, view.member_ids, bridges, health).authority


def _kafka_expected(view: GroupView, kafka: KafkaGroup) -> tuple[dict[TopicPartition, str], str]:
    """Expected owner thread per bridge-held partition under Kafka authority (plain consumers hold theirs)."""
    bridge_ids = {b.consumer_id for b in view.bridges}
    members = {m.client_id: m.partitions for m in kafka.members if m.client_id in bridge_ids}
    try:
        from migrator.assign.subdivide import global_thread_assignment

        subs = {b.consumer_id: dict(b.registration.subscription) for b in view.bridges}
        return dict(global_thread_assignment(members, subs)), "kafka (thread level)"
    except Exception as exc:  # the subdivision is another module's; fall back to consumer level
        log.debug("thread-level kafka assignment unavailable: %s", exc)
        return {tp: cid for cid, parts in members.items() for tp in parts}, "kafka (consumer level)"


def _legacy_expected(
    view: GroupView, partitions: Mapping[str, tuple[int, ...]], owners: Mapping[TopicPartition, str]
) -> tuple[dict[TopicPartition, str] | None, str]:
    """The legacy assignment (range or roundrobin, whichever the owners match best)."""
    if any(m.registration.is_wildcard for m in view.members):
        return None, "owners only (wildcard subscriptions)"
    subs = {m.consumer_id: dict(m.registration.subscription) for m in view.members}
    ctx = context_from_subscriptions("status", subs, partitions)
    best: tuple[int, str, dict[TopicPartition, str]] | None = None
    for name in ("range", "roundrobin"):
        assignment = dict(ASSIGNORS[name](ctx))
        misses = sum(1 for tp, thread in assignment.items() if owners.get(tp) != thread)
        if best is None or misses < best[0]:
            best = (misses, name, assignment)
    assert best is not None
    return best[2], f"zookeeper ({best[1]})"


def build_report(
    view: GroupView,
    kafka: KafkaGroup | None,
    *,
    kafka_error: str | None = None,
    partitions: Mapping[str, tuple[int, ...]] | None = None,
    kafka_offsets: Mapping[TopicPartition, int] | None = None,
    log_ends: Mapping[TopicPartition, int] | None = None,
    now_ms: int | None = None,
) -> StatusReport:
    """Pure: everything `status` shows, with warnings an operator can act on.

    `partitions` lists each subscribed topic's partition ids (None: unknown, then only partitions seen in
    owners/offsets are shown); `kafka_offsets` holds Kafka-committed next offsets (-1 or missing: none).
    """
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    partitions = dict(partitions or {})
    kafka_offsets = {tp: o for tp, o in (kafka_offsets or {}).items() if o >= 0}
    log_ends = dict(log_ends or {})
    warnings: list[str] = []
    if not view.exists:
        warnings.append(f"group {view.group} does not exist in ZooKeeper")
    if kafka_error:
        warnings.append(f"Kafka not checked: {kafka_error}")
    if view.mode.is_unknown:
        warnings.append(f"unknown mode value {view.mode.raw!r} (bridges treat it as zookeeper)")
    if view.legacy and view.mode.mode is Mode.KAFKA:
        names = ", ".join(m.consumer_id for m in view.legacy)
        warnings.append(f"legacy connector present while mode is kafka ({names}): bridges stay on zookeeper")
    if view.corrupt_members:
        names = ", ".join(f"{c.consumer_id} ({c.problem})" for c in view.corrupt_members)
        warnings.append(f"{len(view.corrupt_members)} ids node(s) do not decode: {names}")

    authority = expected_authority(view, kafka)
    owned_by: dict[str, int] = {}
    for thread in view.owners.values():
        owned_by[consumer_of_thread(thread)] = owned_by.get(consumer_of_thread(thread), 0) + 1

    bridges: list[BridgeRow] = []
    for b in view.bridges:
        pa = view.authorities.get(b.consumer_id)
        in_group = None if kafka is None else b.consumer_id in kafka.client_ids
        bridges.append(
            BridgeRow(
                consumer_id=b.consumer_id,
                authority=pa.authority.value if pa else None,
                generation=pa.generation if pa else None,
                age_s=round((now_ms - pa.timestamp_ms) / 1000, 1) if pa else None,
                in_kafka_group=in_group,
                owned_partitions=owned_by.get(b.consumer_id, 0),
                held=pa.held if pa else False,
            )
        )
        if pa is not None and pa.held:
            warnings.append(f"bridge {b.consumer_id} is {pa.reason}")
        if in_group is False:
            warnings.append(f"bridge {b.consumer_id}'s embedded member is not in the Kafka group")
        if pa is None:
            warnings.append(f"bridge {b.consumer_id} has not published its authority")
        elif pa.authority.value != authority.value:
            warnings.append(f"bridge {b.consumer_id} obeys {pa.authority.value} but should obey {authority.value}")

    plain = kafka.plain(view.migration_ids) if kafka is not None else ()
    kafka_consumers = tuple(KafkaConsumerRow(m.member_id, m.client_id, m.host, len(m.partitions)) for m in plain)
    unguarded = view.legacy or [b for b in bridges if not b.held]  # held bridges own nothing to overlap with
    if plain and authority is Authority.ZOOKEEPER and unguarded:
        warnings.append(
            f"{len(plain)} plain Kafka consumer(s) present while the authority is zookeeper: "
            "they and the bridges may own the same partitions"
        )
    held_by_kafka = {tp: f"kafka:{m.client_id}" for m in plain for tp in m.partitions}

    expected: dict[TopicPartition, str] | None
    if authority is Authority.KAFKA and kafka is not None:
        expected, basis = _kafka_expected(view, kafka)
    elif partitions:
        expected, basis = _legacy_expected(view, partitions, view.owners)
    else:
        expected, basis = None, "owners only (partitions unknown)"

    all_tps = set(view.owners) | set(view.offsets) | set(kafka_offsets) | set(held_by_kafka)
    all_tps |= {TopicPartition(t, p) for t in view.topics for p in partitions.get(t, ())}
    rows: list[PartitionRow] = []
    for tp in sorted(all_tps):
        zk_off, k_off, end = view.offsets.get(tp), kafka_offsets.get(tp), log_ends.get(tp)
        committed = max(zk_off if zk_off is not None else -1, k_off if k_off is not None else -1)
        lag = None if end is None or committed < 0 else max(end - committed, 0)
        # plain Kafka consumers write no owners node; a partition held both ways shows both (dual ownership)
        owner = " + ".join(o for o in (view.owners.get(tp), held_by_kafka.get(tp)) if o) or None
        exp = expected.get(tp) if expected is not None else None
        rows.append(PartitionRow(tp.topic, tp.partition, owner, exp, zk_off, k_off, end, lag))

    subscribed = {TopicPartition(t, p) for t in view.topics for p in partitions.get(t, ())}
    unowned = [tp for tp in sorted(subscribed) if tp not in view.owners and tp not in held_by_kafka]
    if unowned and view.members:
        warnings.append(f"{len(unowned)} partitions have no owner")
    behind = [r for r in rows if r.zk_offset is not None and (r.kafka_offset is None or r.kafka_offset < r.zk_offset)]
    if behind and kafka is not None:
        warnings.append(f"Kafka offsets behind ZooKeeper on {len(behind)} partitions")

    agree: bool | None = None
    if expected is not None:
        wrong = sorted(tp for tp, thread in expected.items() if tp in view.owners and view.owners[tp] != thread)
        doubled = sorted(tp for tp in view.owners if tp in held_by_kafka)
        agree = not wrong and not doubled
        if wrong:
            warnings.append(
                f"owners disagree with the {basis} assignment on {len(wrong)} partitions: {_partition_names(wrong)}"
            )
        if doubled:
            held = ", ".join(f"{tp} ({held_by_kafka[tp].removeprefix('kafka:')})" for tp in doubled[:10])
            warnings.append(
                f"dual ownership on {len(doubled)} partitions: owned in ZooKeeper and also assigned by Kafka to a "
                f"plain consumer: {held}{_more(doubled, 10)}"
            )

    return StatusReport(
        group=view.group,
        exists=view.exists,
        mode=_mode_word(view),
        mode_raw=view.mode.raw,
        expected_authority=authority.value,
        legacy=tuple(m.consumer_id for m in view.legacy),
        bridges=tuple(bridges),
        kafka_consumers=kafka_consumers,
        corrupt=tuple((c.consumer_id, c.problem) for c in view.corrupt_members),
        kafka_state=kafka.state if kafka else None,
        kafka_assignor=(kafka.assignor or None) if kafka else None,
        owners_agree=agree,
        agreement_basis=basis,
        partitions=tuple(rows),
        warnings=tuple(warnings),
    )


def _more(items: list[TopicPartition], shown: int) -> str:
    return f" and {len(items) - shown} more" if len(items) > shown else ""


def _partition_names(tps: list[TopicPartition], shown: int = 10) -> str:
    """The partitions a warning is about, so it can be checked against the table."""
    return ", ".join(str(tp) for tp in tps[:shown]) + _more(tps, shown)


def _cell(value: object) -> str:
    return "-" if value is None else str(value)


def _authority_cell(bridge: BridgeRow) -> str | None:
    return f"{bridge.authority} (holding nothing)" if bridge.held else bridge.authority


def render_text(report: StatusReport) -> str:
    """The human table; `--json` prints `to_dict()` instead."""
    mode = report.mode if report.mode != "unknown" else f"unknown ({report.mode_raw!r})"
    lines = [
        f"group {report.group}: mode {mode}, expected authority {report.expected_authority}",
        f"kafka group: state {_cell(report.kafka_state)}, assignor {_cell(report.kafka_assignor)}",
        f"owners agree: {_cell(report.owners_agree)} (basis: {report.agreement_basis})",
        "",
        "members:",
    ]
    member_rows: list[list[object]] = [["legacy", cid, "", "", "", "", ""] for cid in report.legacy]
    member_rows += [
        ["bridge", b.consumer_id, _authority_cell(b), b.generation, b.age_s, b.in_kafka_group, b.owned_partitions]
        for b in report.bridges
    ]
    member_rows += [
        ["kafka", f"{k.client_id} ({k.member_id})", "kafka", "", "", True, k.partitions] for k in report.kafka_consumers
    ]
    member_rows += [["corrupt", cid, "", "", "", "", ""] for cid, _problem in report.corrupt]  # problem: see warnings
    headers = ["kind", "id", "authority", "generation", "age_s", "in_kafka_group", "partitions"]
    lines += ["  " + line for line in align([headers, *member_rows])] if member_rows else ["  (none)"]
    lines += ["", "partitions:"]
    part_rows: list[list[object]] = [
        [f"{r.topic}-{r.partition}", r.owner, r.expected_owner, r.zk_offset, r.kafka_offset, r.log_end, r.lag]
        for r in report.partitions
    ]
    headers = ["partition", "owner", "expected", "zk_offset", "kafka_offset", "log_end", "lag"]
    lines += ["  " + line for line in align([headers, *part_rows])] if part_rows else ["  (none)"]
    lines += ["", "warnings:"] + ([f"  - {w}" for w in report.warnings] or ["  (none)"])
    return "\n".join(lines)


def read_status(
    zk: KazooClient, group: str, admin: KafkaAdmin | None, missing: str = "no --bootstrap-servers given"
) -> StatusReport:
    """Read ZooKeeper, then Kafka (a Kafka failure becomes a warning: the ZooKeeper half still shows).

    `missing` says why there is no admin, for that warning."""
    view = read_group(zk, group)
    if admin is None:
        return build_report(view, None, kafka_error=missing)
    try:
        kafka = admin.describe_group(group)
        partitions = {t: ids for t in sorted(view.topics) if (ids := admin.partitions(t)) is not None}
        tps = set(view.owners) | set(view.offsets)
        tps |= {TopicPartition(t, p) for t, ids in partitions.items() for p in ids}
        tps |= {tp for m in kafka.members for tp in m.partitions}
        kafka_offsets = admin.committed_offsets(group, sorted(tps))
        log_ends = admin.log_end_offsets(sorted(tps))
    except KafkaUnavailable as exc:
        return build_report(view, None, kafka_error=str(exc))
    return build_report(view, kafka, partitions=partitions, kafka_offsets=kafka_offsets, log_ends=log_ends)
