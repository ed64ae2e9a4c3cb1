"""The one read model of a consumer group: what ZooKeeper holds plus what the Kafka group coordinator says.

Every fact the authority rule, the fallback guard, the set-mode preflight, `status`, the fleet classifier
and the demo ask about a group is defined here once, as a named property, so that each question has one
answer. The membership sets, and how a bridge appears in each:

- `ids/<consumerId>` (registered): every ZooKeeper-coordinated member, bridge or legacy connector;
- `migration/ids/<consumerId>` (announced): every bridge. A bridge announces itself before it registers
  and deregisters before it withdraws the announcement, so a bridge may be in one set and not the other;
- the Kafka group's members, whose client.id is their bridge's consumerId for a bridge's embedded member.

A legacy connector never joins the Kafka group, so a Kafka member whose client.id is no announced bridge is a
plain Kafka consumer, whatever else its client.id matches.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from types import MappingProxyType

from migrator.protocol.codecs import Mode
from migrator.protocol.dialect import Dialect
from migrator.protocol.group_view import GroupView, Member
from migrator.protocol.kafka import KafkaGroup, KafkaMember, rebalance_protocol
from migrator.protocol.partition import TopicPartition


def plain_consumers(kafka: KafkaGroup, announced: Set[str]) -> tuple[KafkaMember, ...]:
    """Kafka members that are no bridge's embedded member (`announced`: every bridge's consumerId). Plain
    consumers often share a client.id, so each member counts, in the group's order."""
    return tuple(m for m in kafka.members if m.client_id not in announced)


def outside_zookeeper(kafka: KafkaGroup, registered_bridges: Set[str]) -> tuple[KafkaMember, ...]:
    """Kafka members ZooKeeper's assignment does not account for: plain consumers, and the embedded members
    of bridges not (or no longer) registered under `ids`. Falling back to ZooKeeper beside any of them may
    hand a bridge a partition one of them processes."""
    return tuple(m for m in kafka.members if m.client_id not in registered_bridges)


def partition_lag(end: int | None, zookeeper: int | None, kafka: int | None) -> int | None:
    """Records after the offset a member resumes from: the larger of the ZooKeeper and Kafka commits
    (CONTRACT §4). None when the log end is unknown or neither store holds a commit."""
    committed = max(-1 if zookeeper is None else zookeeper, -1 if kafka is None else kafka)
    if end is None or committed < 0:
        return None
    return max(0, end - committed)


def _frozen(mapping: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class Group:
    """One group, read at about one instant. `kafka` is None when the Kafka group was not described;
    `kafka_committed` (next offsets, -1 or missing: none) and `log_end` are empty when not read."""

    zookeeper: GroupView
    kafka: KafkaGroup | None = None
    kafka_committed: Mapping[TopicPartition, int] = field(default_factory=dict)
    log_end: Mapping[TopicPartition, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kafka_committed", _frozen(self.kafka_committed))
        object.__setattr__(self, "log_end", _frozen(self.log_end))

    @property
    def name(self) -> str:
        return self.zookeeper.group

    # -- ZooKeeper membership ------------------------------------------------------------------------
    @property
    def registered(self) -> frozenset[str]:
        """Every consumerId under `ids`, whether its node decodes or not."""
        return self.zookeeper.member_ids

    @property
    def announced_bridges(self) -> frozenset[str]:
        """Every consumerId under `migration/ids`: the bridges, registered or not (yet, or any more)."""
        return self.zookeeper.migration_ids

    @property
    def registered_bridges(self) -> frozenset[str]:
        """The registered members that are bridges (`group_view.bridge_ids`): the ones ZooKeeper's assignment counts."""
        return frozenset(m.consumer_id for m in self.zookeeper.bridges)

    @property
    def legacy_members(self) -> tuple[Member, ...]:
        """Registered members that are no bridge (their node decodes; see `undecodable`)."""
        return self.zookeeper.legacy

    @property
    def undecodable(self) -> frozenset[str]:
        """Registered consumerIds whose `ids` node decodes in no dialect: nobody can tell what they are."""
        return frozenset(c.consumer_id for c in self.zookeeper.corrupt_members)

    @property
    def only_bridges(self) -> bool:
        """Every registered member is a bridge (and there is at least one)."""
        return bool(self.zookeeper.members) and not self.legacy_members and not self.undecodable

    @property
    def dialects(self) -> frozenset[Dialect]:
        """The legacy layouts the registered members speak."""
        return frozenset(m.dialect for m in self.zookeeper.members)

    # -- Kafka membership ----------------------------------------------------------------------------
    @property
    def kafka_known(self) -> bool:
        return self.kafka is not None

    @property
    def in_kafka(self) -> frozenset[str]:
        """The client ids of the Kafka group's members (empty when not described)."""
        return self.kafka.client_ids if self.kafka is not None else frozenset()

    @property
    def bridges_joining_kafka(self) -> frozenset[str]:
        """Registered bridges whose embedded member is not in the Kafka group (yet, or any more). Empty when
        the Kafka group was not described: ask `kafka_known` first."""
        return self.registered_bridges - self.in_kafka if self.kafka is not None else frozenset()

    @property
    def bridges_joining_zookeeper(self) -> frozenset[str]:
        """Bridges whose embedded member is in the Kafka group but which are not registered under `ids`."""
        return (self.in_kafka & self.announced_bridges) - self.registered

    @property
    def plain_consumers(self) -> tuple[KafkaMember, ...]:
        """Kafka members that are no bridge's embedded member: they keep their Kafka partitions whatever the
        mode says."""
        return plain_consumers(self.kafka, self.announced_bridges) if self.kafka is not None else ()

    @property
    def outside_zookeeper(self) -> tuple[KafkaMember, ...]:
        """Kafka members ZooKeeper's assignment does not account for (the fallback guard's question)."""
        return outside_zookeeper(self.kafka, self.registered_bridges) if self.kafka is not None else ()

    @property
    def protocol_disagreement(self) -> frozenset[str]:
        """Members disagree on the rebalance protocol: registered bridges, not in the Kafka group, whose
        embedded member runs another protocol (eager or cooperative, as each bridge publishes) than the
        group's chosen assignor. The broker refuses their JoinGroup for as long as the group's members
        offer none of their assignors, so they never join by themselves."""
        if self.kafka is None or not self.kafka.assignor:
            return frozenset()
        chosen = rebalance_protocol(self.kafka.assignor)
        authorities = self.zookeeper.authorities
        return frozenset(
            cid
            for cid in self.bridges_joining_kafka
            if (published := authorities.get(cid)) is not None and published.protocol not in (None, chosen)
        )

    @property
    def kafka_members_needed(self) -> int:
        """Kafka members the group has once every registered bridge has joined (for `group.max.size`)."""
        return len(self.registered_bridges) + len(self.plain_consumers)

    @property
    def stable(self) -> bool:
        """The Kafka group was described and is in a generation with an assignment."""
        return self.kafka is not None and self.kafka.stable

    @property
    def rebalancing(self) -> bool:
        return self.kafka is not None and self.kafka.state.rebalancing

    @property
    def mode_is_kafka(self) -> bool:
        return self.zookeeper.mode.mode is Mode.KAFKA

    # -- offsets -------------------------------------------------------------------------------------
    def partition_lag(self, tp: TopicPartition) -> int | None:
        committed = self.kafka_committed.get(tp)
        kafka = committed if committed is not None and committed >= 0 else None
        return partition_lag(self.log_end.get(tp), self.zookeeper.offsets.get(tp), kafka)

    @property
    def lag(self) -> int | None:
        """Sum of `partition_lag` over the partitions whose log end is known; None when none has a commit."""
        lags = [lag for tp in self.log_end if (lag := self.partition_lag(tp)) is not None]
        return sum(lags) if lags else None
