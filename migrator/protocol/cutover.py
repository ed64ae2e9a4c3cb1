"""The fenced cutover of a group whose members cannot run a bridge: which step comes next, decided from what
is read, so that running the procedure again after any interruption goes on where it stopped and never
repeats a write.

Forward: fence the group's `ids` folder (no member may register again), wait until every legacy member has
left and no owner node remains, carry the offsets to Kafka (max of both stores), record the mode `kafka`.
Rollback: carry the offsets back to ZooKeeper once the Kafka group is empty, record the mode `zookeeper`,
lift the fence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType

from migrator.protocol.group import Group
from migrator.protocol.partition import TopicPartition


class Direction(Enum):
    FORWARD = "cutover"
    ROLLBACK = "rollback"


class Step(Enum):
    """One step of either direction, in the order they run."""

    FENCE = "fence"
    WAIT_EMPTY = "wait-empty"
    CARRY_TO_KAFKA = "carry-offsets"
    RECORD_KAFKA = "record-mode"
    CARRY_TO_ZOOKEEPER = "carry-offsets-back"
    RECORD_ZOOKEEPER = "record-mode-back"
    LIFT_FENCE = "lift-fence"


STEPS: Mapping[Direction, tuple[Step, ...]] = MappingProxyType(
    {
        Direction.FORWARD: (Step.FENCE, Step.WAIT_EMPTY, Step.CARRY_TO_KAFKA, Step.RECORD_KAFKA),
        Direction.ROLLBACK: (Step.CARRY_TO_ZOOKEEPER, Step.RECORD_ZOOKEEPER, Step.LIFT_FENCE),
    }
)

WRITES: frozenset[Step] = frozenset(STEPS[Direction.FORWARD] + STEPS[Direction.ROLLBACK]) - {Step.WAIT_EMPTY}
"""Steps that write (the others only read)."""


class Refusal(Enum):
    """Why the procedure does not go on; nothing is written."""

    NO_ADMIN = "no-admin-identity"
    BRIDGES = "bridges"
    MIXED = "bridges-and-legacy-members"
    UNDECODABLE = "undecodable-members"
    KAFKA_MEMBERS = "live-kafka-members"
    NOT_CUT_OVER = "not-cut-over"


@dataclass(frozen=True, slots=True)
class Fence:
    """What the `ids` folder's ACL lets a member do: `world_can_create` False means fenced. An absent `ids`
    folder is not fenced (a member creates it with an open ACL)."""

    ids_exists: bool
    world_can_create: bool

    @property
    def fenced(self) -> bool:
        return self.ids_exists and not self.world_can_create


def _frozen(mapping: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class CutoverFacts:
    """Everything a step decision needs, read at about one instant.

    `to_kafka` / `to_zookeeper`: what carrying the offsets would write into that store now (max of both
    stores where it differs from the target; empty: already carried). `owner_nodes`: owner nodes left
    under `owners`, whatever the dialect."""

    group: Group
    fence: Fence
    owner_nodes: int
    admin_identity: bool
    to_kafka: Mapping[TopicPartition, int] = field(default_factory=dict)
    to_zookeeper: Mapping[TopicPartition, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "to_kafka", _frozen(self.to_kafka))
        object.__setattr__(self, "to_zookeeper", _frozen(self.to_zookeeper))

    @property
    def live_kafka_members(self) -> int:
        """Members of the Kafka group (0 when it was not described)."""
        return len(self.group.kafka.members) if self.group.kafka is not None else 0

    @property
    def zookeeper_empty(self) -> bool:
        """No member registered under `ids` and no owner node left: nobody consumes through ZooKeeper."""
        return not self.group.registered and self.owner_nodes == 0


@dataclass(frozen=True, slots=True)
class Decision:
    """The next step (None: nothing left to do), or why the procedure refuses."""

    step: Step | None
    refusal: Refusal | None = None

    @property
    def done(self) -> bool:
        return self.step is None and self.refusal is None


DONE = Decision(None)


def is_cut_over(facts: CutoverFacts) -> bool:
    """The forward procedure has completed: fenced, nobody left in ZooKeeper, mode `kafka`."""
    return facts.fence.fenced and facts.zookeeper_empty and facts.group.mode_is_kafka


def members_refusal(group: Group) -> Refusal | None:
    """Bridges switch with `set-mode`; a group mixing them with legacy members, or with members nobody can
    decode, can take neither path."""
    bridges = bool(group.registered_bridges)
    legacy = bool(group.legacy_members)
    if group.undecodable:
        return Refusal.UNDECODABLE
    if bridges and legacy:
        return Refusal.MIXED
    if bridges:
        return Refusal.BRIDGES
    return None


class Route(Enum):
    """The way a group's members reach Kafka coordination."""

    SET_MODE = "set-mode"
    """Its members are bridges: they switch with `set-mode kafka`."""
    CUTOVER = "cutover"
    """Its members cannot run a bridge: stop them behind a fence (`cutover`)."""
    BLOCKED = "blocked"
    """Neither, as it stands (a mix of bridges and legacy members, undecodable members): `members_refusal` says why."""


def route(group: Group) -> Route:
    """Which way `group` takes to Kafka, from its members alone (the fleet scan says it per group)."""
    refusal = members_refusal(group)
    if refusal is Refusal.BRIDGES:
        return Route.SET_MODE
    return Route.CUTOVER if refusal is None else Route.BLOCKED


def needed(step: Step, facts: CutoverFacts) -> bool:
    """Whether `step` still has something to do, judged from the facts alone."""
    checks = {
        Step.FENCE: not facts.fence.fenced,
        Step.WAIT_EMPTY: not facts.zookeeper_empty,
        Step.CARRY_TO_KAFKA: bool(facts.to_kafka),
        Step.RECORD_KAFKA: not facts.group.mode_is_kafka,
        Step.CARRY_TO_ZOOKEEPER: bool(facts.to_zookeeper),
        Step.RECORD_ZOOKEEPER: facts.group.mode_is_kafka,
        Step.LIFT_FENCE: facts.fence.fenced,
    }
    return checks[step]


def remaining(facts: CutoverFacts, direction: Direction) -> tuple[Step, ...]:
    """The steps of `direction` that still have something to do, in order (the dry run's plan)."""
    return tuple(step for step in STEPS[direction] if needed(step, facts))


def next_step(facts: CutoverFacts, direction: Direction) -> Decision:
    """The first step of `direction` with something to do, or the refusal that stops the procedure."""
    if direction is Direction.FORWARD:
        return _forward(facts)
    return _rollback(facts)


def _forward(facts: CutoverFacts) -> Decision:
    if is_cut_over(facts) and (facts.live_kafka_members or not facts.to_kafka):
        return DONE  # its Kafka consumers run (and commit past ZooKeeper's offsets): nothing to do, or to refuse
    if not facts.admin_identity:
        return Decision(None, Refusal.NO_ADMIN)
    refusal = members_refusal(facts.group)
    if refusal is not None:
        return Decision(None, refusal)
    todo = remaining(facts, Direction.FORWARD)
    if not todo:
        return DONE
    if todo[0] is Step.CARRY_TO_KAFKA and facts.live_kafka_members:
        return Decision(None, Refusal.KAFKA_MEMBERS)
    return Decision(todo[0])


def _rollback(facts: CutoverFacts) -> Decision:
    todo = remaining(facts, Direction.ROLLBACK)
    if not facts.fence.fenced and not facts.group.mode_is_kafka:
        return DONE
    if not facts.admin_identity:
        return Decision(None, Refusal.NO_ADMIN)
    if not facts.fence.fenced:
        return Decision(None, members_refusal(facts.group) or Refusal.NOT_CUT_OVER)
    if facts.live_kafka_members:
        return Decision(None, Refusal.KAFKA_MEMBERS)
    return Decision(todo[0]) if todo else DONE


def refusal_text(refusal: Refusal, facts: CutoverFacts) -> str:
    """One line for the operator: what stops the procedure and what to do instead."""
    group = facts.group
    names = ", ".join(sorted(group.registered_bridges)[:5])
    legacy = ", ".join(sorted(m.consumer_id for m in group.legacy_members)[:5])
    texts = {
        Refusal.NO_ADMIN: "the fence needs the admin identity: give --zk-auth digest:USER:PASSWORD "
        "(or $MIGRATOR_ZK_AUTH), the identity that alone may lift it",
        Refusal.BRIDGES: f"the members of {group.name} are bridges ({names}): switch them with `migrator set-mode "
        "kafka` instead",
        Refusal.MIXED: f"{group.name} mixes bridges ({names}) and legacy members ({legacy}): a fence would stop "
        "the bridges from re-registering and set-mode cannot move the legacy members; move the legacy members "
        "to bridges (then set-mode) or stop the bridges (then cutover)",
        Refusal.UNDECODABLE: f"{group.name} has members whose registration decodes in no dialect "
        f"({', '.join(sorted(group.undecodable)[:5])}): nobody can tell whether they are bridges",
        Refusal.KAFKA_MEMBERS: f"the Kafka group {group.name} has {facts.live_kafka_members} live member(s) "
        f"({', '.join(sorted(group.in_kafka)[:5])}); the broker rejects offset commits for a non-empty group "
        "and they would process beside the other side: stop them and run the command again",
        Refusal.NOT_CUT_OVER: f"{group.name} was not cut over (its ids folder is not fenced): "
        "use `migrator set-mode zookeeper` for a group of bridges",
    }
    return texts[refusal]
