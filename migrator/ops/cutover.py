"""`cutover`: move a group whose members cannot run a bridge to Kafka coordination, fenced, and back.

Each step is decided from what is read (`migrator.protocol.cutover.next_step`) right before it runs, so a
run interrupted anywhere (Ctrl-C, a lost connection, `--timeout`) is resumed by running it again: a step
whose effect is already in place is skipped, never written twice. The offsets are carried with the rule and
writers of `offsets sync` (max of both stores, a Kafka write only into an empty group) and read back.

For one group, `Runner.run`; for many, each step on its own: `read_facts` then `next_step` decide,
`Runner.execute` (or `zk.fence.fence`, `wait_empty`, `carry_to_kafka`, `record_mode`) write.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kazoo.client import KazooClient

from migrator.coordination.preflight import SwitchCheck
from migrator.errors import MigratorError, RefusedError
from migrator.kafka.admin import KafkaAdmin
from migrator.ops import modes
from migrator.ops import offsets as ops_offsets
from migrator.ops.dialect import read_layout
from migrator.ops.wait import WaitTimeout
from migrator.protocol.codecs import Mode
from migrator.protocol.cutover import (
    CutoverFacts,
    Direction,
    Refusal,
    Step,
    next_step,
    refusal_text,
    remaining,
)
from migrator.protocol.group import Group
from migrator.protocol.partition import TopicPartition
from migrator.zk import fence as zk_fence
from migrator.zk.group_reader import read_membership

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
    """Who still holds the group in ZooKeeper while the wait-empty step waits."""

    members: tuple[str, ...]
    owner_nodes: int

    @property
    def done(self) -> bool:
        return not self.members and not self.owner_nodes

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


def read_facts(zk: KazooClient, admin: KafkaAdmin, group: str, *, admin_identity: bool) -> CutoverFacts:
    """Both stores' offsets, the group read model, the fence and the owner nodes left, read now.

    A group with no offset in ZooKeeper (pykafka's, which commit to Kafka) gets none carried back: its
    members read Kafka's, and ZooKeeper offsets would make its layout Scala's."""
    view, zookeeper = ops_offsets.read_store("zookeeper", zk, group, admin)
    kafka = admin.group_offsets(group)
    return CutoverFacts(
        group=Group(view, admin.describe_group(group), kafka_committed=kafka),
        fence=zk_fence.read_fence(zk, group),
        owner_nodes=zk_fence.owner_nodes(zk, group),
        admin_identity=admin_identity,
        to_kafka=ops_offsets.sync_plan(zookeeper, kafka),
        to_zookeeper=ops_offsets.sync_plan(kafka, zookeeper) if zookeeper else {},
    )


def zookeeper_progress(zk: KazooClient, group: str) -> WaitProgress:
    """Registered members and owner nodes left, read from ZooKeeper alone (the wait's poll)."""
    view = read_membership(zk, group)
    return WaitProgress(tuple(sorted(view.member_ids)), zk_fence.owner_nodes(zk, group))


def wait_empty(
    zk: KazooClient, group: str, *, timeout_s: float, on_progress: Callable[[WaitProgress], None] | None = None
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


def carry_to_zookeeper(zk: KazooClient, group: str, plan: Mapping[TopicPartition, int]) -> None:
    """Write `plan` into the group's ZooKeeper offsets and read it back."""
    ops_offsets.write_zookeeper(zk, group, plan)
    _verify(plan, ops_offsets.read_store("zookeeper", zk, group, None)[1], "ZooKeeper")


def _verify(plan: Mapping[TopicPartition, int], read_back: Mapping[TopicPartition, int], store: str) -> None:
    wrong = sorted(tp for tp, offset in plan.items() if read_back.get(tp, -1) < offset)
    if wrong:
        tp = wrong[0]
        raise MigratorError(
            f"{store} reads back {read_back.get(tp)} for {tp} after writing {plan[tp]} "
            f"({len(wrong)} partition(s) differ); run the command again"
        )


def record_mode(zk: KazooClient, group: str, target: Mode, *, reason: str, who: str) -> str:
    """The mode `target` with its audit entry (`reason`), conditional on the mode read; the audit node's path.

    No set-mode preflight: it judges bridges, and a cutover group has none, only a fence."""
    before, stat = modes.read_mode(zk, group)
    change = modes.ModeChange(group, before, target, SwitchCheck(target), forced=False, dry_run=False, before_stat=stat)
    written = modes.write_mode(zk, change, reason=reason, who=who)
    return written.audit_path or ""


@dataclass(frozen=True, slots=True)
class Runner:
    """One group's procedure: the connections, the admin identity and the operator's options."""

    zk: KazooClient
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
            record_mode(self.zk, self.group, target, reason=reason, who=self.who)
        done = StepDone(step, started_s, time.monotonic() - t0, written)
        if self.on_step is not None:
            self.on_step(done)
        return done

    def run(self, direction: Direction, *, dry_run: bool = False, stop_before: Step | None = None) -> CutoverResult:
        """Decide and carry out steps until none is left (or, `dry_run`, only say which are left).

        `stop_before`: return when that step is next, e.g. `Step.CARRY_TO_KAFKA` to fence and wait only (a
        wave of groups whose deployments stop together)."""
        dialect = read_layout(self.zk, self.group).word
        done: list[StepDone] = []
        while True:
            facts = self.facts()
            decision = next_step(facts, direction)
            if decision.refusal is not None:
                raise CutoverRefused(decision.refusal, refusal_text(decision.refusal, facts))
            if decision.step is None or dry_run or decision.step is stop_before:
                planned = remaining(facts, direction) if dry_run and decision.step is not None else ()
                return CutoverResult(direction, facts, dialect, dry_run, tuple(done), planned, decision.step)
            if done and done[-1].step is decision.step and decision.step is not Step.WAIT_EMPTY:
                raise MigratorError(f"step {decision.step.value} of {self.group} did not take effect; run again")
            done.append(self.execute(decision.step, facts))
