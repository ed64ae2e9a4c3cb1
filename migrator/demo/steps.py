"""The walk through KIP-125's migration plan, one member or one mode write per step.

Each step records its trigger (wall clock ns, the observer's clock) and waits until the group has converged
and every partition is processed again, so each step's pause is measured on its own: the pause windows of
`migrator.observe.pause` end at the next trigger.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, cast

from migrator.coordination.authority import KafkaHealth, decide_authority
from migrator.demo.group import authorities, kafka_assignment, owning_members, wait_for
from migrator.demo.workload import ConnectorMember, LiveLog, MemberInfo, MemberKind, PlainConsumer
from migrator.errors import RefusedError
from migrator.kafka.admin import KafkaAdmin
from migrator.observe.pause import pause_after
from migrator.ops import modes
from migrator.protocol.codecs import Authority, Mode, ModeNode
from migrator.zk.paths import GroupPaths
from migrator.zk.session import ZkSession, stat_of


class Member(Protocol):
    """What the driver needs of a member, wherever it runs (this process or a child process)."""

    @property
    def info(self) -> MemberInfo: ...

    def shutdown(self) -> None: ...


class KafkaMember(Member, Protocol):
    """A plain Kafka consumer: the driver compares what it was assigned with the Kafka group."""

    def assigned_now(self) -> set[int]: ...


MemberFactory = Callable[[MemberKind, str], Member]
"""(kind, name) -> a started member."""


@dataclass(frozen=True, slots=True)
class Sizing:
    """How big and how patient the demo is (`--quick` is smaller and waits less)."""

    members: int
    streams: int
    partitions: int
    rate: float  # records per second, over all partitions
    settle_s: float  # extra steady time after each step, so the timeline shows it
    step_timeout_s: float = 60.0


QUICK = Sizing(members=2, streams=2, partitions=8, rate=400.0, settle_s=0.2)
FULL = Sizing(members=3, streams=2, partitions=12, rate=600.0, settle_s=1.0)


@dataclass
class Step:
    number: int
    phase: str
    action: str
    trigger_ns: int
    converged_s: float = 0.0
    resumed_s: float = 0.0
    pause_s: float | None = None


@dataclass
class GroupDriver:
    """Starts and stops members, writes the mode, and knows what "converged" means for the live group."""

    zookeeper: str
    bootstrap: str
    group: str
    topic: str
    sizing: Sizing
    zk: ZkSession
    admin: KafkaAdmin
    log: LiveLog
    echo: Callable[[str], None]
    live: dict[str, Member] = field(default_factory=dict)
    known: dict[str, MemberInfo] = field(default_factory=dict)
    plain_done: list[PlainConsumer] = field(default_factory=list)
    mode: Mode | None = None
    steps: list[Step] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    started_ns: int = field(default_factory=time.time_ns)
    spawn: MemberFactory | None = None  # None: every member runs in this process
    layout: dict[str, str] = field(default_factory=dict)  # the connectors' layout (`workload.layout_properties`)

    # -- members -------------------------------------------------------------------------------------
    def start(self, kind: MemberKind, name: str) -> Member:
        member: Member
        if self.spawn is not None:
            member = self.spawn(kind, name)
        elif kind is MemberKind.PLAIN:
            member = PlainConsumer(self.bootstrap, self.group, self.topic, self.log, name).start()
        else:
            bootstrap = self.bootstrap if kind is MemberKind.BRIDGE else None
            member = ConnectorMember(
                self.zookeeper, self.group, name, self.topic, self.sizing.streams, self.log, bootstrap, self.layout
            )
        self.live[name] = member
        self.known[name] = member.info
        return member

    def stop(self, name: str) -> None:
        member = self.live.pop(name)
        try:
            member.shutdown()
        except RuntimeError as exc:
            self.errors.append(str(exc))
        if isinstance(member, PlainConsumer):
            self.plain_done.append(member)

    def stop_all(self) -> None:
        for name in list(self.live):
            self.stop(name)

    # -- convergence ---------------------------------------------------------------------------------
    def _connectors(self) -> list[Member]:
        return [m for m in self.live.values() if m.info.kind.in_zookeeper]

    def _plain(self) -> list[KafkaMember]:
        return [cast(KafkaMember, m) for m in self.live.values() if m.info.kind is MemberKind.PLAIN]

    def expected_authority(self) -> Authority:
        """What the authority rule (`coordination.authority`) gives the live members once every bridge has
        joined the Kafka group: the converged state each step waits for."""
        mode = ModeNode.decode(self.mode.value.encode()) if self.mode is not None else ModeNode.absent()
        members = {m.info.consumer_id for m in self._connectors()}
        bridges = {m.info.consumer_id for m in self._connectors() if m.info.kind is MemberKind.BRIDGE}
        return decide_authority(mode, members, bridges, KafkaHealth(joined=True)).authority

    def converged(self) -> bool:
        connectors = self._connectors()
        bridges = [m.info.consumer_id for m in connectors if m.info.kind is MemberKind.BRIDGE]
        authority = self.expected_authority()
        published = authorities(self.zk, self.group, bridges)
        if any(published.get(b) != authority for b in bridges):
            return False
        zk_owned = owning_members(self.zk, self.group, self.topic)
        by_member: dict[str, set[int]] = {}
        for p, member in zk_owned.items():
            by_member.setdefault(member, set()).add(p)
        if set(by_member) - {m.info.consumer_id for m in connectors}:
            return False  # an owner node of a member that left
        if authority is Authority.ZOOKEEPER and not self._plain():
            return len(zk_owned) == self.sizing.partitions and all(m.info.consumer_id in by_member for m in connectors)
        kafka = kafka_assignment(self.admin, self.group)
        if kafka is None:
            return False
        if set(kafka) != set(bridges) | {p.info.name for p in self._plain()}:
            return False
        if any(by_member.get(b, set()) != kafka[b] for b in bridges):
            return False
        if any(p.assigned_now() != kafka[p.info.name] for p in self._plain()):
            return False
        covered = [p for parts in kafka.values() for p in parts]
        return sorted(covered) == list(range(self.sizing.partitions))

    # -- steps ---------------------------------------------------------------------------------------
    def step(self, phase: str, action: str, do: Callable[[], int | None]) -> Step:
        """Run one transition; `do` may return its own trigger time (e.g. the mode node's mtime)."""
        began = time.time_ns()
        trigger = do() or began
        step = Step(len(self.steps) + 1, phase, action, trigger)
        self.steps.append(step)
        wait_for(self.converged, self.sizing.step_timeout_s, f"step {step.number}: {action}")
        step.converged_s = (time.time_ns() - trigger) / 1e9
        converged_ns = time.time_ns()
        parts = self.sizing.partitions
        wait_for(
            lambda: len(self.log.resumed_since(converged_ns)) >= parts,
            self.sizing.step_timeout_s,
            f"every partition processed again after {action}",
            interval_s=0.01,
        )
        step.resumed_s = (time.time_ns() - trigger) / 1e9
        pause = pause_after(trigger, self.log.records_since(trigger))
        step.pause_s = pause.seconds if pause is not None and pause.partitions >= parts else None
        pause_text = f"{step.pause_s:5.2f}s" if step.pause_s is not None else "  n/a"
        self.echo(
            f"  [{step.number:2d}] {phase:<9} {action:<34} converged {step.converged_s:5.2f}s   pause {pause_text}"
        )
        time.sleep(self.sizing.settle_s)
        return step

    def replace(self, phase: str, old: str, kind: MemberKind, new: str) -> Step:
        def do() -> None:
            self.stop(old)
            self.start(kind, new)

        return self.step(phase, f"{old} -> {new}", do)

    def set_mode(self, target: Mode, phase: str) -> Step:
        def do() -> int:
            change = None
            deadline = time.monotonic() + self.sizing.step_timeout_s
            while change is None:
                try:
                    change = modes.set_mode(
                        self.zk, self.group, target, admin=self.admin, reason="migrator demo", who=modes.who_am_i(None)
                    )
                except RefusedError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)  # e.g. the Kafka group is still rebalancing after the last step
            self.mode = target
            stat = stat_of(self.zk, GroupPaths(self.group).mode)
            return stat.mtime * 1_000_000 if stat is not None else time.time_ns()

        return self.step(phase, f"set-mode {target.value} (preflight ok)", do)
