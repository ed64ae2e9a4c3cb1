"""`cutover`: move a group whose members cannot run a bridge to Kafka coordination, fenced, and back.

Each step is decided from what is read (`migrator.protocol.cutover.next_step`) right before it runs, so a
run interrupted anywhere (Ctrl-C, a lost connection, `--timeout`) is resumed by running it again: a step
whose effect is already in place is skipped, never written twice. The offsets are carried with the rule and
writers of `offsets sync` (max of both stores, a Kafka write only into an empty group) and read back.

Every decision is over one pipelined pass of the group reader (`migrator.zk.group_reader`), fence
included: each step's facts (with Kafka's side read right after it) and each poll of the wait.

For one group, `Runner.run`; for many, each step on its own: `read_facts` then `next_step` decide,
`Runner.execute` (or `zk.fence.fence`, `wait_empty`, `carry_to_kafka`, `record_mode`) write.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from migrator.coordination.preflight import SwitchCheck
from migrator.errors import MigratorError, RefusedError
from migrator.kafka.admin import KafkaAdmin
from migrator.ops import modes
from migrator.ops import offsets as ops_offsets
from migrator.ops.dialect import refuse_unrecognised
from migrator.ops.wait import WaitTimeout
from migrator.protocol.codecs import Mode
from migrator.protocol.cutover import (
    CutoverFacts,
    Direction,
    Refusal,
    Step,
    next_step,
    nobody_in_zookeeper,
    refusal_text,
    remaining,
)
from migrator.protocol.group import Group
from migrator.protocol.group_view import GroupView
from migrator.protocol.kafka import KafkaGroup
from migrator.protocol.layout_dialect import GroupLayout
from migrator.protocol.partition import TopicPartition
from migrator.protocol.stores import OffsetStore
from migrator.zk import fence as zk_fence
from migrator.zk.group_reader import read_group_with_layout
from migrator.zk.session import ZkSession

POLL_INTERVAL_S = 0.5
AUDIT_REASON = {Direction.FORWARD: "cutover", Direction.ROLLBACK: "cutover rollback"}


class CutoverRefused(RefusedError):
    """The procedure refuses to go on (exit 2, nothing written by this run's refused step)."""

    def __init__(self, refusal: Refusal, message: str) -> None:
        super().__init__(message)
        self.refusal = refusal


@dataclass(frozen=True, slots=True)
class StepDone:
    """A step this run carried out: when it started (epoch seconds), how long it took, what it wrote."""

    step: Step
    started_s: float
    seconds: float
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WaitProgress:
    """Who still holds the group in ZooKeeper while the wait-empty step waits, and whether nobody does."""

    members: tuple[str, ...]
    owner_nodes: int
    done: bool

    @classmethod
    def of(cls, view: GroupView, layout: GroupLayout) -> WaitProgress:
        """The progress one pass of the group reader shows (`nobody_in_zookeeper` decides `done`)."""
        owner_nodes = len(layout.owner_nodes)
        return cls(tuple(sorted(view.member_ids)), owner_nodes, nobody_in_zookeeper(Group(view), owner_nodes))

    def summary(self) -> str:
        return f"{len(self.members)} legacy member(s) registered, {self.owner_nodes} owner node(s) left"


@dataclass(frozen=True, slots=True)
class CutoverResult:
    """What a run found and did: `done` the steps carried out, `planned` (dry run) the steps still to do,
    `facts` the last state read."""

    direction: Direction
    facts: CutoverFacts
    dialect: str | None
    dry_run: bool
    done: tuple[StepDone, ...] = ()
    planned: tuple[Step, ...] = ()
    next_step: Step | None = None
    """The step that comes next (None: nothing left): a dry run's or a `stop_before` run's."""

    @property
    def resume_at(self) -> Mapping[TopicPartition, int]:
        """Where the side that takes over resumes: Kafka's committed offsets forward, ZooKeeper's back."""
        group = self.facts.group
        if self.direction is Direction.FORWARD:
            return MappingProxyType(dict(group.kafka_committed))
        return group.zookeeper.offsets


ZkRead = tuple[GroupView, GroupLayout]
"""One pass of the group reader: the view (with its fence) and the recognised layout."""


def read_zookeeper(zk: ZkSession, group: str) -> ZkRead:
    """The group in one pipelined pass, with its fence."""
    return read_group_with_layout(zk, group, fence=True)


def cutover_facts(
    read: ZkRead,
    kafka: KafkaGroup,
    committed: Mapping[TopicPartition, int],
    *,
    admin_identity: bool,
) -> CutoverFacts:
    """The facts of one decision: one pass of the group reader (its fence, its owner nodes of every dialect,
    its ZooKeeper offsets) and the Kafka group with its `committed` offsets.

    A group with no offset in ZooKeeper (pykafka's, which commit to Kafka) gets none carried back: its
    members read Kafka's, and ZooKeeper offsets would make its layout Scala's."""
    view, layout = read
    if view.fence is None:
        raise ValueError(f"the read of {view.group} carries no fence: read it with `read_zookeeper`")
    zookeeper = ops_offsets.store_offsets(OffsetStore.ZOOKEEPER, view, None)
    return CutoverFacts(
        group=Group(view, kafka, kafka_committed=committed),
        fence=view.fence,
        owner_nodes=len(layout.owner_nodes),
        admin_identity=admin_identity,
        to_kafka=ops_offsets.sync_plan(zookeeper, committed),
        to_zookeeper=ops_offsets.sync_plan(committed, zookeeper) if zookeeper else {},
    )


def read_facts(zk: ZkSession, admin: KafkaAdmin, group: str, *, admin_identity: bool) -> CutoverFacts:
    """The facts of a decision, read now: ZooKeeper in one pass, then Kafka."""
    return kafka_side(read_zookeeper(zk, group), admin, admin_identity=admin_identity)


def kafka_side(read: ZkRead, admin: KafkaAdmin, *, admin_identity: bool) -> CutoverFacts:
    """The facts of a decision over `read` (a pass just made), with Kafka's side read now."""
    group = read[0].group
    committed = admin.group_offsets(group)
    return cutover_facts(read, admin.describe_group(group), committed, admin_identity=admin_identity)


def zookeeper_progress(zk: ZkSession, group: str) -> WaitProgress:
    """Registered members and owner nodes left, read from ZooKeeper alone in one pass (the wait's poll: neither
    the offsets' data nor the fence, which the step after it reads again)."""
    return WaitProgress.of(*read_group_with_layout(zk, group, offsets=False))


def wait_empty(
    zk: ZkSession, group: str, *, timeout_s: float, on_progress: Callable[[WaitProgress], None] | None = None
) -> None:
    """Until no member is registered and no owner node is left; WaitTimeout (exit 1) after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = zookeeper_progress(zk, group)
        if state.done:
            return
        if time.monotonic() >= deadline:
            who = ", ".join(state.members[:5])
            raise WaitTimeout(
                f"{group} did not empty within {timeout_s:g}s: {state.summary()}{f' ({who})' if who else ''}; "
                "the fence stays: stop the old deployment and run the command again"
            )
        if on_progress is not None:
            on_progress(state)
        time.sleep(POLL_INTERVAL_S)


def carry_to_kafka(admin: KafkaAdmin, group: str, plan: Mapping[TopicPartition, int]) -> None:
    """Write `plan` (an `offsets sync` plan) into the empty Kafka group and read it back."""
    ops_offsets.write_kafka(admin, group, plan)
    _verify(plan, admin.committed_offsets(group, list(plan)), "Kafka")


def carry_to_zookeeper(zk: ZkSession, group: str, plan: Mapping[TopicPartition, int]) -> None:
    """Write `plan` into the group's ZooKeeper offsets and read it back."""
    ops_offsets.write_zookeeper(zk, group, plan)
    _verify(plan, ops_offsets.read_store(OffsetStore.ZOOKEEPER, zk, group, None)[1], "ZooKeeper")


def _verify(plan: Mapping[TopicPartition, int], read_back: Mapping[TopicPartition, int], store: str) -> None:
    wrong = sorted(tp for tp, offset in plan.items() if read_back.get(tp, -1) < offset)
    if wrong:
        tp = wrong[0]
        raise MigratorError(
            f"{store} reads back {read_back.get(tp)} for {tp} after writing {plan[tp]} "
            f"({len(wrong)} partition(s) differ); run the command again"
        )


def record_mode(zk: ZkSession, view: GroupView, target: Mode, *, reason: str, who: str) -> str:
    """The mode `target` with its audit entry (`reason`), conditional on the mode `view` read (a change since
    refuses, `ModeChangedMeanwhile`); the audit node's path.

    No set-mode preflight: it judges bridges, and a cutover group has none, only a fence."""
    change = modes.ModeChange(
        view.group,
        view.mode,
        target,
        SwitchCheck(target),
        forced=False,
        dry_run=False,
        before_version=view.mode_version,
    )
    written = modes.write_mode(zk, change, reason=reason, who=who)
    return written.audit_path or ""


@dataclass(frozen=True, slots=True)
class Runner:
    """One group's procedure: the connections, the admin identity and the operator's options."""

    zk: ZkSession
    admin: KafkaAdmin
    group: str
    admin_auth: str | None
    who: str
    timeout_s: float
    on_progress: Callable[[WaitProgress], None] | None = None
    on_step: Callable[[StepDone], None] | None = None

    def facts(self) -> CutoverFacts:
        return read_facts(self.zk, self.admin, self.group, admin_identity=self.admin_auth is not None)

    def execute(self, step: Step, facts: CutoverFacts) -> StepDone:
        """Carry out one step decided from `facts`."""
        started_s, t0 = time.time(), time.monotonic()
        written: Mapping[TopicPartition, int] = {}
        assert self.admin_auth is not None, "next_step refuses without the admin identity"
        if step is Step.FENCE:
            zk_fence.fence(self.zk, self.group, self.admin_auth)
        elif step is Step.LIFT_FENCE:
            zk_fence.lift(self.zk, self.group, self.admin_auth)
        elif step is Step.WAIT_EMPTY:
            wait_empty(self.zk, self.group, timeout_s=self.timeout_s, on_progress=self.on_progress)
        elif step is Step.CARRY_TO_KAFKA:
            written = facts.to_kafka
            carry_to_kafka(self.admin, self.group, written)
        elif step is Step.CARRY_TO_ZOOKEEPER:
            written = facts.to_zookeeper
            carry_to_zookeeper(self.zk, self.group, written)
        else:
            target = Mode.KAFKA if step is Step.RECORD_KAFKA else Mode.ZOOKEEPER
            reason = AUDIT_REASON[Direction.FORWARD if target is Mode.KAFKA else Direction.ROLLBACK]
            record_mode(self.zk, facts.group.zookeeper, target, reason=reason, who=self.who)
        done = StepDone(step, started_s, time.monotonic() - t0, written)
        if self.on_step is not None:
            self.on_step(done)
        return done

    def run(
        self,
        direction: Direction,
        *,
        dry_run: bool = False,
        stop_before: Step | None = None,
        first: ZkRead | None = None,
    ) -> CutoverResult:
        """Decide and carry out steps until none is left (or, `dry_run`, only say which are left), each decided
        over one read; a group whose layout neither dialect explains is refused.

        `stop_before`: return when that step is next, e.g. `Step.CARRY_TO_KAFKA` to fence and wait only (a
        wave of groups whose deployments stop together). `first`: the group as just read by the caller
        (`read_zookeeper`), over which the first step is decided."""
        first = first or read_zookeeper(self.zk, self.group)
        dialect = refuse_unrecognised(first[1], self.group).word
        facts = kafka_side(first, self.admin, admin_identity=self.admin_auth is not None)
        done: list[StepDone] = []
        while True:
            decision = next_step(facts, direction)
            if decision.refusal is not None:
                raise CutoverRefused(decision.refusal, refusal_text(decision.refusal, facts))
            if decision.step is None or dry_run or decision.step is stop_before:
                planned = remaining(facts, direction) if dry_run and decision.step is not None else ()
                return CutoverResult(direction, facts, dialect, dry_run, tuple(done), planned, decision.step)
            if done and done[-1].step is decision.step and decision.step is not Step.WAIT_EMPTY:
                raise MigratorError(f"step {decision.step.value} of {self.group} did not take effect; run again")
            done.append(self.execute(decision.step, facts))
            facts = self.facts()
