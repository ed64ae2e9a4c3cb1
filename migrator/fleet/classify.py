"""The fleet scan's rules: one pure decision per group over what ZooKeeper and Kafka said.

Every reason is `code: detail`; the summary counts codes, so a code never carries per-group text.
The order of the rules matters and is documented in docs/fleet.md: contradictions first (INCONSISTENT),
then membership (ORPHANED, MIXED_KAFKA_CONSUMERS, LEGACY, MIGRATING), and only for groups made of bridges
the readiness or convergence checks (READY / KAFKA / BLOCKED).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from migrator.assign.model import consumer_of_thread
from migrator.fleet.guard import switch_refusals
from migrator.fleet.model import Classification, FleetRow, KafkaGroupFacts, Status
from migrator.protocol.acl import members_can_create
from migrator.protocol.codecs import Authority, Mode
from migrator.protocol.cutover import CutoverState, Fence, cutover_state, route
from migrator.protocol.group import Group
from migrator.protocol.group_view import GroupView
from migrator.protocol.layout_dialect import Recognition
from migrator.protocol.lifecycle import GroupFacts, GroupTree, abandoned_blockers, finished_blockers, last_commit_ms
from migrator.protocol.partition import TopicPartition


def reason_code(reason: str) -> str:
    return reason.split(":", 1)[0].strip()


def _ids(items: Iterable[str], limit: int = 3) -> str:
    items = sorted(items)
    shown = ", ".join(items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def stable_since_ms(view: GroupView) -> int | None:
    """The last change that restarts the stability clock: a member registered, or the mode was written."""
    times = [m.ctime_ms for m in view.members]
    if view.mode_mtime_ms is not None:
        times.append(view.mode_mtime_ms)
    return max(times) if times else None


def expected_partitions(view: GroupView, kafka: KafkaGroupFacts | None) -> frozenset[TopicPartition]:
    """Partitions the group must own: every partition of its static topics, plus what Kafka assigned."""
    parts: set[TopicPartition] = set()
    if kafka is not None:
        for topic in view.topics:
            parts.update(TopicPartition(topic, p) for p in kafka.partitions.get(topic, ()))
        if kafka.group is not None:
            for member in kafka.group.members:
                parts.update(member.partitions)
    return frozenset(parts)


def owned_partitions(view: GroupView) -> frozenset[TopicPartition]:
    return frozenset(view.owners)


def read_model(view: GroupView, kafka: KafkaGroupFacts | None) -> Group:
    """The group's read model from what the scan read (Kafka's half empty when Kafka did not answer)."""
    if kafka is None or kafka.error is not None:
        return Group(view)
    return Group(view, kafka.group, kafka_committed=kafka.committed, log_end=kafka.log_end)


def group_lag(view: GroupView, kafka: KafkaGroupFacts | None) -> int | None:
    """`Group.lag`: None when Kafka did not answer or nothing is committed."""
    return read_model(view, kafka).lag


def plain_kafka_consumers(view: GroupView, kafka: KafkaGroupFacts | None) -> tuple[str, ...]:
    """Client ids of the group's plain Kafka consumers (`Group.plain_consumers`; one per member, sorted)."""
    return tuple(sorted(m.client_id for m in read_model(view, kafka).plain_consumers))


def _stale_owners(view: GroupView) -> list[str]:
    ids = view.member_ids
    stale = sorted(f"{tp} by {thread}" for tp, thread in view.owners.items() if consumer_of_thread(thread) not in ids)
    return [f"stale-owner: {len(stale)} owners of no member, e.g. {_ids(stale, 2)}"] if stale else []


def _blockers(view: GroupView) -> list[str]:
    reasons = [f"corrupt-member: {c.consumer_id}: {c.problem}" for c in view.corrupt_members]
    if view.mode.is_unknown:
        reasons.append(f"unknown-mode: migration/mode holds {view.mode.raw!r}")
    return reasons


def _kafka_reasons(view: GroupView, kafka: KafkaGroupFacts | None, *, topics: bool = True) -> list[str]:
    """What Kafka says against the group; `topics`: also subscribed topics the brokers do not have."""
    if kafka is None:
        return ["kafka-unchecked: no --bootstrap-servers given"]
    if kafka.error is not None or kafka.group is None:
        return [f"kafka-unavailable: {kafka.error or 'no answer'}"]
    reasons: list[str] = []
    missing = Group(view, kafka.group).bridges_joining_kafka
    if missing:
        reasons.append(f"not-in-kafka-group: {len(missing)} embedded members missing: {_ids(missing)}")
    if kafka.group.state.rebalancing:
        reasons.append(f"kafka-rebalancing: Kafka group state is {kafka.group.state.name}")
    absent = sorted(t for t in view.topics if not kafka.partitions.get(t)) if topics else []
    if absent:
        reasons.append(f"topic-missing: {_ids(absent)}")
    return reasons


def _ownership_reasons(view: GroupView, kafka: KafkaGroupFacts | None) -> list[str]:
    expected = expected_partitions(view, kafka)
    unowned = expected - owned_partitions(view)
    if not unowned:
        return []
    return [f"unowned-partitions: {len(unowned)} of {len(expected)}, e.g. {_ids(map(str, unowned), 2)}"]


def _authority_reasons(view: GroupView, want: Authority) -> list[str]:
    silent = [m.consumer_id for m in view.bridges if m.consumer_id not in view.authorities]
    wrong = [
        f"{m.consumer_id}={view.authorities[m.consumer_id].authority.value}"
        for m in view.bridges
        if m.consumer_id in view.authorities and view.authorities[m.consumer_id].authority != want
    ]
    reasons = []
    if silent:
        reasons.append(f"no-authority-published: {_ids(silent)}")
    if wrong:
        reasons.append(f"authority-not-{want.value}: {_ids(wrong)}")
    return reasons


def _offset_reasons(view: GroupView, kafka: KafkaGroupFacts) -> list[str]:
    beyond: list[str] = []
    no_kafka: list[str] = []
    for tp in sorted(set(view.offsets) | set(kafka.committed)):
        zk_offset = view.offsets.get(tp, -1)
        end = kafka.log_end.get(tp)
        k = kafka.committed.get(tp, -1)
        if end is not None and max(zk_offset, k) > end:
            beyond.append(f"{tp} at {max(zk_offset, k)} > end {end}")
        if k < 0 and zk_offset > 0:
            no_kafka.append(str(tp))
    reasons = []
    if beyond:
        reasons.append(f"offset-beyond-log-end: {_ids(beyond, 2)}")
    if no_kafka:
        reasons.append(
            f"kafka-offset-missing: dual commit inactive? {len(no_kafka)} partitions, e.g. {_ids(no_kafka, 2)}"
        )
    return reasons


def classify(
    view: GroupView,
    kafka: KafkaGroupFacts | None,
    now_ms: int,
    stable_for_ms: int,
    group_max_size: int | None,
) -> Classification:
    """The status of one group and every reason behind it. Pure: same inputs, same answer."""
    if not view.exists:
        return Classification(Status.ORPHANED, ("vanished: the group disappeared during the scan",))
    stale = _stale_owners(view)
    if stale:
        return Classification(Status.INCONSISTENT, tuple(stale + _blockers(view)))
    plain = plain_kafka_consumers(view, kafka)
    if not view.members and not view.corrupt_members:
        if plain:
            return Classification(Status.KAFKA, (f"kafka-consumers-only: {len(plain)} Kafka consumers, no znodes",))
        return Classification(Status.ORPHANED, ("no-members: nobody is registered under ids",))
    if plain:
        all_bridges = not view.legacy and not view.corrupt_members
        if view.mode.mode is Mode.KAFKA and all_bridges:
            note = "canary: plain Kafka consumers beside bridges under kafka authority"
        else:
            note = "double-ownership-risk: plain Kafka consumers while ZooKeeper is the authority"
        return Classification(Status.MIXED_KAFKA_CONSUMERS, (f"plain-kafka-consumers: {_ids(plain)}", note))
    notes = _blockers(view)
    if view.legacy:
        status = Status.MIGRATING if view.bridges else Status.LEGACY
        legacy = f"legacy-members: {len(view.legacy)} of {len(view.members)} are not bridges"
        return Classification(status, (legacy, *notes))
    if not view.bridges:  # only corrupt registrations
        return Classification(Status.BLOCKED, tuple(notes))

    if view.mode.mode is Mode.KAFKA:
        problems = notes + _kafka_reasons(view, kafka) + _authority_reasons(view, Authority.KAFKA)
        problems += _ownership_reasons(view, kafka)
        if problems:
            return Classification(Status.BLOCKED, tuple(f"not-converged: {p}" for p in problems))
        return Classification(Status.KAFKA, ())

    problems = notes + _readiness_reasons(view, kafka, now_ms, stable_for_ms, group_max_size)
    if not problems:  # the set-mode preflight has the last word, so READY never means "set-mode refuses"
        problems = [f"preflight: {r}" for r in switch_refusals(Mode.KAFKA, view, kafka, group_max_size)]
    if problems:
        return Classification(Status.BLOCKED, tuple(problems))
    return Classification(Status.READY, ())


def _readiness_reasons(
    view: GroupView, kafka: KafkaGroupFacts | None, now_ms: int, stable_for_ms: int, group_max_size: int | None
) -> list[str]:
    """Why a group of bridges under ZooKeeper authority may not be switched to kafka yet; empty: READY."""
    problems: list[str] = []
    since = stable_since_ms(view)
    if since is not None and now_ms - since < stable_for_ms:
        problems.append(f"not-stable: last change {(now_ms - since) // 1000}s ago, need {stable_for_ms // 1000}s")
    problems += _kafka_reasons(view, kafka)
    problems += _authority_reasons(view, Authority.ZOOKEEPER)
    if kafka is not None and kafka.error is None:
        problems += _offset_reasons(view, kafka)
        problems += _ownership_reasons(view, kafka)  # the last ZooKeeper rebalance completed
    if group_max_size is not None and len(view.members) > group_max_size:
        problems.append(f"group-too-large: {len(view.members)} members > group.max.size {group_max_size}")
    return problems


def with_layout(classification: Classification, layout: Recognition) -> Classification:
    """A group whose nodes match neither legacy layout, or both, is marked with why, and never READY: a switch
    must not act on a layout nobody can read."""
    if layout.refusal is None:
        return classification
    status = Status.BLOCKED if classification.status is Status.READY else classification.status
    return Classification(status, (*classification.reasons, f"layout-{layout.refusal.value}: {layout.detail}"))


def dialect_name(layout: Recognition) -> str | None:
    """The row's dialect: `scala` or `pykafka`, the refusal (`unreadable`, `mixed`), or None (nothing to tell)."""
    if layout.refusal is not None:
        return layout.refusal.value
    return layout.dialect.value if layout.dialect is not None else None


def to_row(
    ensemble: str,
    view: GroupView,
    kafka: KafkaGroupFacts | None,
    classification: Classification,
    now_ms: int,
    layout: Recognition | None = None,
) -> FleetRow:
    """The flat row of one classified group (`layout`: its recognised dialect, when read)."""
    group = kafka.group if kafka is not None else None
    expected = expected_partitions(view, kafka)
    return FleetRow(
        ensemble=ensemble,
        group=view.group,
        status=classification.status.value,
        reasons=list(classification.reasons),
        members=len(view.members),
        bridges=len(view.bridges),
        legacy=len(view.legacy),
        corrupt_members=len(view.corrupt_members),
        dialect=dialect_name(layout) if layout is not None else None,
        route=member_route(view, kafka),
        mode=view.mode.raw if view.mode.exists else None,
        mode_mtime_ms=view.mode_mtime_ms,
        stable_since_ms=stable_since_ms(view),
        authority_kafka=sum(1 for a in view.authorities.values() if a.authority is Authority.KAFKA),
        kafka_state=group.state.name if group is not None else None,
        kafka_members=len(group.members) if group is not None else 0,
        kafka_plain_consumers=len(plain_kafka_consumers(view, kafka)),
        partitions=len(expected),
        owned=len(expected & owned_partitions(view)),
        lag=group_lag(view, kafka),
        scanned_at_ms=now_ms,
    )


def convergence_problems(
    view: GroupView,
    kafka: KafkaGroupFacts | None,
    generations_before: Mapping[str, int],
) -> list[str]:
    """Why a group switched to kafka has not converged yet; empty when it has.

    Converged means: mode still kafka, every bridge published authority kafka in a rebalance *after*
    the switch (its generation grew past the one recorded before), every embedded member in the Kafka
    group, every partition owned.
    """
    problems: list[str] = []
    if view.mode.mode is not Mode.KAFKA:
        problems.append(f"mode-changed: migration/mode is now {view.mode.raw!r}")
    if view.legacy:
        problems.append(f"legacy-members: {_ids(m.consumer_id for m in view.legacy)}")
    problems += _authority_reasons(view, Authority.KAFKA)
    old = [
        m.consumer_id
        for m in view.bridges
        if m.consumer_id in view.authorities
        and m.consumer_id in generations_before
        and view.authorities[m.consumer_id].generation <= generations_before[m.consumer_id]
    ]
    if old:
        problems.append(f"no-rebalance-since-switch: {_ids(old)}")
    problems += _kafka_reasons(view, kafka, topics=False)
    problems += _ownership_reasons(view, kafka)
    return problems


def restore_problems(view: GroupView, kafka: KafkaGroupFacts | None) -> list[str]:
    """Why a group restored to zookeeper has not settled back yet; empty when it has: mode not kafka, every
    bridge publishing authority zookeeper, every partition owned."""
    problems: list[str] = []
    if view.mode.mode is Mode.KAFKA:
        problems.append("mode-changed: migration/mode is kafka again")
    return problems + _authority_reasons(view, Authority.ZOOKEEPER) + _ownership_reasons(view, kafka)


def may_be_abandoned(row: FleetRow, kafka: KafkaGroupFacts | None) -> bool:
    """Worth reading the whole tree for: nobody registered (ORPHANED, not vanished) and Kafka answered, so that
    its side (its committed offsets, a live group) can be judged: finished, or abandoned. Without Kafka a group
    is never called either."""
    return (
        row.state is Status.ORPHANED
        and row.members == 0
        and row.bridges == 0
        and kafka is not None
        and kafka.group is not None
    )


def finished(view: GroupView, tree: GroupTree, kafka: KafkaGroupFacts) -> Classification | None:
    """KAFKA, finished, when `migrator cleanup`'s rule finds nothing in the way (`protocol.lifecycle.
    finished_blockers`): nobody left in the tree and Kafka holding every offset ZooKeeper holds, at or beyond it.
    Such a group no longer depends on ZooKeeper: its tree is left to clean. None otherwise."""
    if kafka.group is None or not tree.exists:
        return None
    if finished_blockers(GroupFacts(view, tree, kafka.group, kafka_committed=kafka.committed)):
        return None
    return Classification(Status.KAFKA, ("finished: nobody left in ZooKeeper and Kafka holds every offset it holds",))


def abandoned(
    view: GroupView, tree: GroupTree, kafka: KafkaGroupFacts, now_ms: int, abandoned_after_ms: int
) -> Classification | None:
    """ABANDONED when the lifecycle rule finds nothing in the way (`protocol.lifecycle.abandoned_blockers`):
    no member anywhere, no live Kafka group nor retained Kafka offset, no commit for `abandoned_after_ms`
    (the offset nodes' mtime); None otherwise."""
    if kafka.group is None or not tree.exists:
        return None
    facts = GroupFacts(view, tree, kafka.group, kafka_committed=kafka.committed)
    if abandoned_blockers(facts, now_ms, abandoned_after_ms / 1000):
        return None
    last = last_commit_ms(tree)
    when = "never written" if last is None else f"last written {_age(now_ms - last)} ago"
    return Classification(Status.ABANDONED, (f"abandoned: no member, no Kafka group, offsets {when}",))


def _age(ms: int) -> str:
    seconds = max(0, ms // 1000)
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def member_route(view: GroupView, kafka: KafkaGroupFacts | None) -> str | None:
    """How the group's registered members reach Kafka (`protocol.cutover.route`): bridges by `set-mode`, legacy
    members by `cutover`, a mix by neither; None when nobody is registered."""
    if not view.members and not view.corrupt_members:
        return None
    return route(read_model(view, kafka)).value


def may_be_cut_over(row: FleetRow) -> bool:
    """Worth reading the whole tree for: nobody registered, and the mode says kafka."""
    return row.members == 0 and row.bridges == 0 and row.corrupt_members == 0 and row.mode_node.mode is Mode.KAFKA


def fence_of(tree: GroupTree) -> Fence:
    """The `ids` folder's fence as its ACL in the tree shows it (absent folder: not fenced)."""
    ids = next((n for n in tree.nodes if n.path == "ids"), None)
    if ids is None:
        return Fence(ids_exists=False, members_can_create=True)
    return Fence(ids_exists=True, members_can_create=members_can_create((a.perms, a.scheme, a.id) for a in ids.acls))


_CUT_OVER_REASONS = {
    CutoverState.WAITING: "kafka-consumers-missing: start its Kafka consumers",
    CutoverState.STARTED: "kafka-consumers-started: its Kafka consumers joined or committed",
    CutoverState.KAFKA_UNCHECKED: "kafka-unchecked: whether its Kafka consumers started is unknown",
}


def cut_over(view: GroupView, tree: GroupTree, kafka: KafkaGroupFacts | None) -> Classification | None:
    """CUT_OVER, as `status` decides it (`protocol.cutover.cutover_state` over the `ids` fence of `tree`): with
    `kafka-consumers-missing` until its Kafka consumers join or commit. None for any other group, and for one
    whose cutover stopped part-way (it keeps its own status)."""
    group = read_model(replace(view, fence=fence_of(tree)), kafka)
    state = cutover_state(group, len(tree.at_depth("owners", 3)))
    if state is None or state is CutoverState.UNDER_WAY:
        return None
    return Classification(Status.CUT_OVER, (_CUT_OVER_REASONS[state],))
