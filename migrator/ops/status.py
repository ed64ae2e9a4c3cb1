"""`migrator status`: one picture of a group in the middle of a migration, with findings an operator acts on.

`build_report` is pure (GroupView + KafkaGroup + offsets → StatusReport): each kind of finding comes from one
small function over the group's read model (`migrator.protocol.group.Group`), and the report's verdict (OK,
WARN, ERR) is its worst finding's severity. `read_status` is the thin reader around it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from enum import Enum, StrEnum
from typing import TypeVar

from migrator.assign.dialects import dialect_assignments
from migrator.assign.model import consumer_of_thread
from migrator.assign.subdivide import global_thread_assignment
from migrator.coordination.authority import KafkaHealth, decide_authority
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.kafka.authorization import KafkaNotAuthorized, KafkaRequest, asking
from migrator.ops.dialect import unrecognised_message
from migrator.protocol.codecs import Authority, PublishedAuthority
from migrator.protocol.cutover import CutoverState, cutover_next, cutover_state
from migrator.protocol.dialect import Dialect
from migrator.protocol.fetch import FetchHealth
from migrator.protocol.group import Group
from migrator.protocol.group_view import GroupView
from migrator.protocol.kafka import KafkaGroup
from migrator.protocol.layout_dialect import GroupLayout
from migrator.protocol.partition import TopicPartition
from migrator.table import align
from migrator.zk.group_reader import read_group_with_layout
from migrator.zk.session import ZkSession

T = TypeVar("T")


class Severity(StrEnum):
    WARN = "WARN"
    """Worth a look; nothing is processed twice or left unprocessed because of it."""
    ERR = "ERR"
    """Records may be processed twice or not at all, or the group could not be judged."""


class Verdict(StrEnum):
    """The whole group's state, as Burrow gives it: the worst finding's severity, OK without any."""

    OK = "OK"
    WARN = "WARN"
    ERR = "ERR"


class FindingKind(StrEnum):
    GROUP_MISSING = "group-missing"
    LAYOUT_UNRECOGNISED = "layout-unrecognised"
    KAFKA_NOT_CHECKED = "kafka-not-checked"
    KAFKA_UNREACHABLE = "kafka-unreachable"
    KAFKA_ACL_MISSING = "kafka-acl-missing"
    UNKNOWN_MODE = "unknown-mode"
    LEGACY_UNDER_KAFKA = "legacy-under-kafka"
    UNDECODABLE_MEMBER = "undecodable-member"
    BRIDGE_HELD = "bridge-held"
    BRIDGE_CANNOT_FETCH = "bridge-cannot-fetch"
    BRIDGE_NOT_IN_KAFKA = "bridge-not-in-kafka"
    PROTOCOL_DISAGREEMENT = "protocol-disagreement"
    BRIDGE_UNPUBLISHED = "bridge-unpublished"
    BRIDGE_WRONG_AUTHORITY = "bridge-wrong-authority"
    PLAIN_UNDER_ZOOKEEPER = "plain-under-zookeeper"
    UNOWNED_PARTITIONS = "unowned-partitions"
    KAFKA_OFFSETS_BEHIND = "kafka-offsets-behind"
    OWNERS_DISAGREE = "owners-disagree"
    DUAL_OWNERSHIP = "dual-ownership"
    OVERLAPPING_KAFKA_ASSIGNMENT = "overlapping-kafka-assignment"
    CUTOVER_UNFINISHED = "cutover-unfinished"
    KAFKA_CONSUMERS_MISSING = "kafka-consumers-missing"


ERRORS = frozenset(
    {
        FindingKind.GROUP_MISSING,
        FindingKind.LAYOUT_UNRECOGNISED,
        FindingKind.KAFKA_UNREACHABLE,
        FindingKind.KAFKA_ACL_MISSING,
        FindingKind.PLAIN_UNDER_ZOOKEEPER,
        FindingKind.UNOWNED_PARTITIONS,
        FindingKind.BRIDGE_CANNOT_FETCH,
        FindingKind.PROTOCOL_DISAGREEMENT,
        FindingKind.DUAL_OWNERSHIP,
        FindingKind.OVERLAPPING_KAFKA_ASSIGNMENT,
    }
)
"""The kinds of finding that are errors (docs/operations.md, `status`); every other kind is a warning."""


@dataclass(frozen=True, slots=True)
class Finding:
    kind: FindingKind
    severity: Severity
    message: str


def finding(kind: FindingKind, message: str) -> Finding:
    return Finding(kind, Severity.ERR if kind in ERRORS else Severity.WARN, message)


def verdict_of(findings: tuple[Finding, ...]) -> Verdict:
    if any(f.severity is Severity.ERR for f in findings):
        return Verdict.ERR
    return Verdict.WARN if findings else Verdict.OK


class NotChecked(Enum):
    """Why the Kafka half of the report is missing."""

    NO_BROKERS = "no brokers"
    UNREACHABLE = "unreachable"
    DENIED = "denied"
    """Kafka refused a request for want of an ACL (the detail names it)."""


@dataclass(frozen=True, slots=True)
class KafkaNotChecked:
    why: NotChecked
    detail: str


_NOT_CHECKED_KIND = {
    NotChecked.NO_BROKERS: FindingKind.KAFKA_NOT_CHECKED,
    NotChecked.UNREACHABLE: FindingKind.KAFKA_UNREACHABLE,
    NotChecked.DENIED: FindingKind.KAFKA_ACL_MISSING,
}


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
    fetch: str = "ok"
    """`ok`, or why its fetcher cannot read some owned partitions: `denied`, `unreachable`, `failing`."""


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
    verdict: Verdict
    dialect: str | None
    """`scala` or `pykafka`: the legacy layout the group is written in; None when empty or unrecognised."""
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
    findings: tuple[Finding, ...] = field(default=())
    fenced: bool | None = None
    """Whether the `ids` folder's ACL denies members CREATE (the cutover fence); None when it was not read."""
    cutover: str | None = None
    """A fenced group's `protocol.cutover.CutoverState` (`fenced`, `waiting-for-kafka-consumers`,
    `kafka-consumers-started`, `cut-over`); None when not fenced."""
    next: str | None = None
    """What the operator does next about a fenced group (None: not fenced)."""

    @property
    def warnings(self) -> tuple[str, ...]:
        """Every finding's message, in report order."""
        return tuple(f.message for f in self.findings)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def error_line(report: StatusReport) -> str | None:
    """The one line a failed `status` ends with (after the report): its first error finding; None unless ERR."""
    errors = [f for f in report.findings if f.severity is Severity.ERR]
    if not errors:
        return None
    more = f" (and {len(errors) - 1} more error findings)" if len(errors) > 1 else ""
    return f"group {report.group} is ERR: {errors[0].kind.value}: {errors[0].message}{more}"


def _mode_word(view: GroupView) -> str:
    if not view.mode.exists:
        return "absent"
    return "unknown" if view.mode.is_unknown else str(view.mode.raw)


def expected_authority(view: GroupView, kafka: KafkaGroup | None) -> Authority:
    """The authority the bridges' own rule (CONTRACT §5) gives now, Kafka health judged from DescribeGroups
    (unknown without it): a member that does not decode counts as a legacy one, and no bridge means no one
    joined the Kafka group."""
    group = Group(view, kafka)
    bridges = group.registered_bridges
    health = KafkaHealth(
        joined=bool(bridges), reason="no bridge is registered", missing_bridges=group.bridges_joining_kafka
    )
    return decide_authority(view.mode, group.registered, bridges, health).authority


Expected = dict[TopicPartition, str]


def _kafka_expected(group: Group, kafka: KafkaGroup) -> tuple[Expected, str, list[Finding]]:
    """Expected owner thread per bridge-held partition under Kafka authority (plain consumers hold theirs)."""
    bridges = group.zookeeper.bridges
    members = {m.client_id: m.partitions for m in kafka.members if m.client_id in group.registered_bridges}
    subs = {b.consumer_id: dict(b.registration.subscription) for b in bridges}
    try:
        return dict(global_thread_assignment(members, subs)), "kafka (thread level)", []
    except ValueError as exc:  # Kafka gave one partition to two bridges: shown at consumer level
        found = finding(FindingKind.OVERLAPPING_KAFKA_ASSIGNMENT, f"the Kafka assignment overlaps: {exc}")
        return {tp: cid for cid, parts in members.items() for tp in parts}, "kafka (consumer level)", [found]


def _closest(view: GroupView, candidates: Mapping[str, Expected]) -> tuple[Expected, str]:
    """The candidate assignment the owners match best (the first on a tie), and its name."""
    name = min(candidates, key=lambda n: sum(1 for tp, th in candidates[n].items() if view.owners.get(tp) != th))
    return candidates[name], name


def _legacy_expected(
    group: Group, partitions: Mapping[str, tuple[int, ...]], layout: GroupLayout
) -> tuple[Expected | None, str]:
    """The legacy assignment of the group's dialect (range or roundrobin, whichever the owners match best)."""
    view = group.zookeeper
    if any(m.registration.is_wildcard for m in view.members):
        return None, "owners only (wildcard subscriptions)"
    subs = {m.consumer_id: dict(m.registration.subscription) for m in view.members}
    dialect = layout.dialect or Dialect.SCALA
    expected, name = _closest(view, dialect_assignments(dialect, subs, partitions, layout.spelling, layout.leaders))
    return expected, f"zookeeper ({name})"


def _expected(
    group: Group, authority: Authority, partitions: Mapping[str, tuple[int, ...]], layout: GroupLayout
) -> tuple[Expected | None, str, list[Finding]]:
    """The owner thread each partition should have under `authority`, and what that is based on."""
    if authority is Authority.KAFKA and group.kafka is not None:
        return _kafka_expected(group, group.kafka)
    if partitions:
        return (*_legacy_expected(group, partitions, layout), [])
    return None, "owners only (partitions unknown)", []


def _group_findings(group: Group, unchecked: KafkaNotChecked | None, layout: GroupLayout) -> list[Finding]:
    """What is wrong with the group as a whole: its existence, its layout, Kafka's half, the mode, its members'
    kinds."""
    view = group.zookeeper
    found: list[Finding] = []
    if not view.exists:
        found.append(finding(FindingKind.GROUP_MISSING, f"group {view.group} does not exist in ZooKeeper"))
    if layout.unrecognised is not None:
        found.append(finding(FindingKind.LAYOUT_UNRECOGNISED, unrecognised_message(view.group, layout.unrecognised)))
    if unchecked is not None:
        found.append(finding(_NOT_CHECKED_KIND[unchecked.why], f"Kafka not checked: {unchecked.detail}"))
    if view.mode.is_unknown:
        message = f"unknown mode value {view.mode.raw!r} (bridges treat it as zookeeper)"
        found.append(finding(FindingKind.UNKNOWN_MODE, message))
    if group.legacy_members and group.mode_is_kafka:
        names = ", ".join(m.consumer_id for m in group.legacy_members)
        message = f"legacy connector present while mode is kafka ({names}): bridges stay on zookeeper"
        found.append(finding(FindingKind.LEGACY_UNDER_KAFKA, message))
    if view.corrupt_members:
        names = ", ".join(f"{c.consumer_id} ({c.problem})" for c in view.corrupt_members)
        message = f"{len(view.corrupt_members)} ids node(s) do not decode: {names}"
        found.append(finding(FindingKind.UNDECODABLE_MEMBER, message))
    return found


_CUTOVER_FINDING = {
    CutoverState.UNDER_WAY: FindingKind.CUTOVER_UNFINISHED,
    CutoverState.WAITING: FindingKind.KAFKA_CONSUMERS_MISSING,
}


def _cutover_findings(group: Group, state: CutoverState | None) -> list[Finding]:
    """A fenced group that is not cut over yet, or cut over and waiting for its Kafka consumers."""
    kind = _CUTOVER_FINDING.get(state) if state is not None else None
    if kind is None or state is None:
        return []
    name = group.name
    what = "cut over and fenced" if state is CutoverState.WAITING else "fenced but not cut over"
    return [finding(kind, f"{name} is {what}: {cutover_next(state, name)}")]


def _bridge_findings(row: BridgeRow, published: PublishedAuthority | None, authority: Authority) -> list[Finding]:
    cid = row.consumer_id
    found: list[Finding] = []
    if published is not None and published.held:
        found.append(finding(FindingKind.BRIDGE_HELD, f"bridge {cid} is {published.reason}"))
    if published is not None and published.fetch.health is not FetchHealth.OK:
        message = f"bridge {cid} owns partitions it cannot fetch ({published.fetch.describe()})"
        found.append(finding(FindingKind.BRIDGE_CANNOT_FETCH, message))
    if row.in_kafka_group is False:
        message = f"bridge {cid}'s embedded member is not in the Kafka group"
        found.append(finding(FindingKind.BRIDGE_NOT_IN_KAFKA, message))
    if published is None:
        found.append(finding(FindingKind.BRIDGE_UNPUBLISHED, f"bridge {cid} has not published its authority"))
    elif published.authority is not authority:
        message = f"bridge {cid} obeys {published.authority.value} but should obey {authority.value}"
        found.append(finding(FindingKind.BRIDGE_WRONG_AUTHORITY, message))
    return found


def _bridges(group: Group, authority: Authority, now_ms: int) -> tuple[list[BridgeRow], list[Finding]]:
    """One row per registered bridge, and what its published authority and Kafka membership say."""
    view = group.zookeeper
    owned_by: dict[str, int] = {}
    for thread in view.owners.values():
        owned_by[consumer_of_thread(thread)] = owned_by.get(consumer_of_thread(thread), 0) + 1
    rows: list[BridgeRow] = []
    found: list[Finding] = []
    for b in view.bridges:
        pa = view.authorities.get(b.consumer_id)
        row = BridgeRow(
            consumer_id=b.consumer_id,
            authority=pa.authority.value if pa else None,
            generation=pa.generation if pa else None,
            age_s=round((now_ms - pa.timestamp_ms) / 1000, 1) if pa else None,
            in_kafka_group=None if group.kafka is None else b.consumer_id in group.in_kafka,
            owned_partitions=owned_by.get(b.consumer_id, 0),
            held=pa.held if pa else False,
            fetch=pa.fetch.health.value if pa else FetchHealth.OK.value,
        )
        rows.append(row)
        found += _bridge_findings(row, pa, authority)
    for cid in sorted(group.protocol_disagreement):
        assert group.kafka is not None  # a disagreement needs the Kafka group's assignor
        message = (f"bridge {cid} cannot join the Kafka group: members disagree on the rebalance protocol (the "
                   f"group's members use {group.kafka.assignor!r}; docs/runbook.md, step 3)")  # fmt: skip
        found.append(finding(FindingKind.PROTOCOL_DISAGREEMENT, message))
    return rows, found


def _plain_findings(group: Group, authority: Authority, bridges: list[BridgeRow]) -> list[Finding]:
    """Plain Kafka consumers beside members that obey ZooKeeper and own partitions (held bridges own none)."""
    plain = group.plain_consumers
    unguarded = group.legacy_members or [b for b in bridges if not b.held]
    if not (plain and authority is Authority.ZOOKEEPER and unguarded):
        return []
    message = (
        f"{len(plain)} plain Kafka consumer(s) present while the authority is zookeeper: "
        "they and the bridges may own the same partitions"
    )
    return [finding(FindingKind.PLAIN_UNDER_ZOOKEEPER, message)]


def _partition_rows(
    group: Group,
    expected: Expected | None,
    subscribed: set[TopicPartition],
    held_by_kafka: Mapping[TopicPartition, str],
) -> list[PartitionRow]:
    """One row per partition anything knows of; a partition held both ways shows both owners."""
    view = group.zookeeper
    all_tps = set(view.owners) | set(view.offsets) | set(held_by_kafka) | subscribed
    all_tps |= {tp for tp, offset in group.kafka_committed.items() if offset >= 0}
    rows: list[PartitionRow] = []
    for tp in sorted(all_tps):
        committed = group.kafka_committed.get(tp)
        kafka_offset = committed if committed is not None and committed >= 0 else None
        owner = " + ".join(o for o in (view.owners.get(tp), held_by_kafka.get(tp)) if o) or None
        exp = expected.get(tp) if expected is not None else None
        end, lag = group.log_end.get(tp), group.partition_lag(tp)
        rows.append(PartitionRow(tp.topic, tp.partition, owner, exp, view.offsets.get(tp), kafka_offset, end, lag))
    return rows


def _coverage_findings(
    group: Group, rows: list[PartitionRow], subscribed: set[TopicPartition], held_by_kafka: Mapping[TopicPartition, str]
) -> list[Finding]:
    """Partitions nobody owns, and partitions whose Kafka commit trails ZooKeeper's."""
    view = group.zookeeper
    found: list[Finding] = []
    unowned = [tp for tp in sorted(subscribed) if tp not in view.owners and tp not in held_by_kafka]
    if unowned and view.members:
        message = f"{len(unowned)} partitions have no owner: {_partition_names(unowned)}"
        found.append(finding(FindingKind.UNOWNED_PARTITIONS, message))
    behind = [r for r in rows if r.zk_offset is not None and (r.kafka_offset is None or r.kafka_offset < r.zk_offset)]
    if behind and group.kafka is not None:
        message = f"Kafka offsets behind ZooKeeper on {len(behind)} partitions"
        found.append(finding(FindingKind.KAFKA_OFFSETS_BEHIND, message))
    return found


def _agreement(
    group: Group, expected: Expected | None, basis: str, held_by_kafka: Mapping[TopicPartition, str]
) -> tuple[bool | None, list[Finding]]:
    """Whether the owners match the expected assignment, and none is also held by a plain consumer."""
    if expected is None:
        return None, []
    owners = group.zookeeper.owners
    wrong = sorted(tp for tp, thread in expected.items() if tp in owners and owners[tp] != thread)
    doubled = sorted(tp for tp in owners if tp in held_by_kafka)
    found: list[Finding] = []
    if wrong:
        message = f"owners disagree with the {basis} assignment on {len(wrong)} partitions: {_partition_names(wrong)}"
        found.append(finding(FindingKind.OWNERS_DISAGREE, message))
    if doubled:
        held = ", ".join(f"{tp} ({held_by_kafka[tp].removeprefix('kafka:')})" for tp in doubled[:10])
        message = (
            f"dual ownership on {len(doubled)} partitions: owned in ZooKeeper and also assigned by Kafka to a "
            f"plain consumer: {held}{_more(doubled, 10)}"
        )
        found.append(finding(FindingKind.DUAL_OWNERSHIP, message))
    return not wrong and not doubled, found


def _plain_rows(group: Group) -> tuple[KafkaConsumerRow, ...]:
    return tuple(KafkaConsumerRow(m.member_id, m.client_id, m.host, len(m.partitions)) for m in group.plain_consumers)


def build_report(
    view: GroupView,
    kafka: KafkaGroup | None,
    *,
    unchecked: KafkaNotChecked | None = None,
    partitions: Mapping[str, tuple[int, ...]] | None = None,
    kafka_offsets: Mapping[TopicPartition, int] | None = None,
    log_ends: Mapping[TopicPartition, int] | None = None,
    now_ms: int | None = None,
    layout: GroupLayout | None = None,
) -> StatusReport:
    """Pure: everything `status` shows, with findings an operator can act on and the verdict they give.

    `partitions` lists each subscribed topic's partition ids (None: unknown, then only partitions seen in
    owners/offsets are shown); `kafka_offsets` holds Kafka-committed next offsets (-1 or missing: none);
    `layout` is the group's dialect (None: an empty group's, Scala's assignors judge the owners).
    """
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    layout = layout or GroupLayout()
    partitions = dict(partitions or {})
    group = Group(view, kafka, kafka_committed=kafka_offsets or {}, log_end=log_ends or {})
    authority = expected_authority(view, kafka)
    bridges, bridge_findings = _bridges(group, authority, now_ms)
    held_by_kafka = {tp: f"kafka:{m.client_id}" for m in group.plain_consumers for tp in m.partitions}
    expected, basis, expected_findings = _expected(group, authority, partitions, layout)
    subscribed = {TopicPartition(t, p) for t in view.topics for p in partitions.get(t, ())}
    rows = _partition_rows(group, expected, subscribed, held_by_kafka)
    agree, agreement_findings = _agreement(group, expected, basis, held_by_kafka)
    cutover = cutover_state(group, len(layout.owner_nodes))
    findings = (
        _group_findings(group, unchecked, layout)
        + _cutover_findings(group, cutover)
        + bridge_findings
        + _plain_findings(group, authority, bridges)
        + _coverage_findings(group, rows, subscribed, held_by_kafka)
        + expected_findings
        + agreement_findings
    )
    report = _report(group, layout, authority, (bridges, rows), (agree, basis), tuple(findings))
    fence = view.fence
    return replace(
        report,
        fenced=fence.fenced if fence is not None else None,
        cutover=cutover.value if cutover is not None else None,
        next=cutover_next(cutover, view.group) if cutover is not None else None,
    )


def _report(
    group: Group,
    layout: GroupLayout,
    authority: Authority,
    tables: tuple[list[BridgeRow], list[PartitionRow]],
    agreement: tuple[bool | None, str],
    findings: tuple[Finding, ...],
) -> StatusReport:
    view, kafka = group.zookeeper, group.kafka
    return StatusReport(
        group=view.group,
        exists=view.exists,
        verdict=verdict_of(findings),
        dialect=layout.word,
        mode=_mode_word(view),
        mode_raw=view.mode.raw,
        expected_authority=authority.value,
        legacy=tuple(m.consumer_id for m in group.legacy_members),
        bridges=tuple(tables[0]),
        kafka_consumers=_plain_rows(group),
        corrupt=tuple((c.consumer_id, c.problem) for c in view.corrupt_members),
        kafka_state=kafka.state.name if kafka else None,
        kafka_assignor=(kafka.assignor or None) if kafka else None,
        owners_agree=agreement[0],
        agreement_basis=agreement[1],
        partitions=tuple(tables[1]),
        findings=findings,
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


def _cutover_clause(report: StatusReport) -> str:
    """The verdict line's words for a fenced group: where it stands and what comes next."""
    if report.cutover is None:
        return ""
    return f"; fenced, cutover {report.cutover}: next: {report.next}"


def render_text(report: StatusReport) -> str:
    """The human table; `--json` prints `to_dict()` instead."""
    mode = report.mode if report.mode != "unknown" else f"unknown ({report.mode_raw!r})"
    lines = [
        f"group {report.group}: {report.verdict.value}: dialect {_cell(report.dialect)}, mode {mode}, "
        f"expected authority {report.expected_authority}{_cutover_clause(report)}",
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
    findings = [f"  - {f.severity.value} {f.kind.value}: {f.message}" for f in report.findings]
    lines += ["", "findings:"] + (findings or ["  (none)"])
    return "\n".join(lines)


def _read_kafka(
    admin: KafkaAdmin, group: str, view: GroupView
) -> tuple[KafkaGroup, dict[str, tuple[int, ...]], dict[TopicPartition, int], dict[TopicPartition, int]]:
    """The Kafka half: the group, its topics' partitions, committed offsets and log ends; an authorization
    refusal is raised as `KafkaNotAuthorized`, naming the missing ACL."""
    kafka = asking(KafkaRequest.DESCRIBE_GROUP, lambda: admin.describe_group(group), group=group)
    partitions = {t: ids for t in sorted(view.topics) if (ids := admin.partitions(t)) is not None}
    tps = set(view.owners) | set(view.offsets)
    tps |= {TopicPartition(t, p) for t, ids in partitions.items() for p in ids}
    tps |= {tp for m in kafka.members for tp in m.partitions}
    topics = {tp.topic for tp in tps}
    committed = asking(
        KafkaRequest.FETCH_OFFSETS, lambda: admin.committed_offsets(group, sorted(tps)), group=group, topics=topics
    )
    log_ends = asking(KafkaRequest.LIST_OFFSETS, lambda: admin.log_end_offsets(sorted(tps)), topics=topics)
    return kafka, partitions, committed, log_ends


def read_zookeeper(zk: ZkSession, group: str) -> tuple[GroupView, GroupLayout]:
    """The ZooKeeper half, in one pipelined pass: the group in its own dialect, with its fence and whether it
    exists."""
    return read_group_with_layout(zk, group, leaders=True, fence=True)


def read_status(
    view: GroupView, layout: GroupLayout, admin: KafkaAdmin | None, missing: str = "no --bootstrap-servers given"
) -> StatusReport:
    """The report over the ZooKeeper half (`read_zookeeper`) and Kafka's, read now (a Kafka failure becomes an
    error finding: the ZooKeeper half still shows).

    `missing` says why there is no admin, for that finding."""
    group = view.group
    if admin is None:
        return build_report(view, None, unchecked=KafkaNotChecked(NotChecked.NO_BROKERS, missing), layout=layout)
    try:
        kafka, partitions, committed, log_ends = _read_kafka(admin, group, view)
    except KafkaNotAuthorized as exc:
        return build_report(view, None, unchecked=KafkaNotChecked(NotChecked.DENIED, str(exc)), layout=layout)
    except KafkaUnavailable as exc:
        return build_report(view, None, unchecked=KafkaNotChecked(NotChecked.UNREACHABLE, str(exc)), layout=layout)
    return build_report(
        view, kafka, partitions=partitions, kafka_offsets=committed, log_ends=log_ends, layout=layout
    )  # fmt: skip
