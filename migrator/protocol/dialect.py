"""The legacy layouts a ZooKeeper-coordinated consumer may speak under `/consumers/<group>`: its dialects.

A `Dialect` is one value that carries everything that differs between layouts, through its `codec`:

- recognition: whether an `ids` node's data or an `owners/<folder>/<child>` node is written in it;
- the codec of ids and owner nodes (a member's registration, the partition and owner an owner node names);
- owner naming: the folder and node names a member of it creates (`naming`), and whether they depend on the
  partitions' leaders (`leaders_matter`);
- the assignors its members run (`assignors`, names that `migrator.assign.dialects` resolves);
- where offsets live (`offsets_in_zookeeper`).

Everything else asks the dialect and never compares names. A third dialect is one more member of `Dialect`
and one more codec here (docs/architecture.md, "Dialects").

Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from migrator.errors import CorruptNodeError
from migrator.protocol import pykafka_layout
from migrator.protocol.codecs import Registration, decode_owner, encode_owner
from migrator.protocol.partition import TopicPartition
from migrator.protocol.pykafka_layout import OwnerNode, Spelling


@dataclass(frozen=True, slots=True)
class OwnerNodeName:
    """What an `owners/<folder>/<child>` node's path says, in the dialect that wrote it."""

    partition: TopicPartition
    spelling: Spelling | None = None
    """How the folder spells the topic, for a dialect whose folder names vary (pykafka)."""
    leader: int | None = None
    """The partition's leader when the node was named, for a dialect that names nodes after it (pykafka)."""


@dataclass(frozen=True, slots=True)
class OwnerRead:
    """One owner node as a reader found it: the dialect its path is written in, what it claims, and the owner
    thread its data stands for."""

    dialect: Dialect
    name: OwnerNodeName
    thread: str


class OwnerNaming(Protocol):
    """How a member names and fills the owner nodes it creates, waits on and deletes."""

    names_stable: bool
    """Whether a partition's node name is fixed (Scala), not named after a fact that changes (pykafka's
    leader), so that a node can be created before the previous one is seen gone."""

    def folder(self, topic: str) -> str: ...

    def node(self, topic: str, partition: int) -> str: ...

    def released(self, topic: str, partitions: Iterable[int]) -> None:
        """The owner nodes of `partitions` a claim waited for are gone: name the new ones afresh."""

    def encode(self, thread: str) -> bytes: ...

    def decode(self, data: bytes) -> str: ...


class ScalaNaming:
    """`owners/<topic>/<partition>` holding the owner's thread id (CONTRACT §1)."""

    names_stable = True

    def folder(self, topic: str) -> str:
        return topic

    def node(self, topic: str, partition: int) -> str:
        return str(partition)

    def released(self, topic: str, partitions: Iterable[int]) -> None:
        return None

    def encode(self, thread: str) -> bytes:
        return encode_owner(thread)

    def decode(self, data: bytes) -> str:
        return decode_owner(data)


class LeaderNamedNodes(Protocol):
    """The leaders and existing owner node names of one topic, for a dialect that names owner nodes after the
    partition's leader (pykafka): what its naming reads, refreshed by each snapshot."""

    topic: str
    spelling: Spelling
    leaders: dict[int, int]
    nodes: dict[int, str]
    """partition -> the name of an owner node that exists for it."""


class PykafkaNaming:
    """pykafka's owner naming: `owners/<folder>/<leader>-<partition>` holding the consumer id.

    An owner node that exists keeps its name (we wait on and delete that node: our own, else another
    member's); once the nodes a claim waited for are gone, the new one is named after the partition's
    current leader, as pykafka names it."""

    names_stable = False

    def __init__(self, view: LeaderNamedNodes) -> None:
        self._view = view

    def folder(self, topic: str) -> str:
        return pykafka_layout.topic_text(topic, self._view.spelling)

    def leader_name(self, partition: int) -> str:
        """The name pykafka gives a new owner node of `partition`: after its current leader."""
        return OwnerNode(self._view.leaders.get(partition, -1), partition).name

    def node(self, topic: str, partition: int) -> str:
        return self._view.nodes.get(partition) or self.leader_name(partition)

    def released(self, topic: str, partitions: Iterable[int]) -> None:
        if topic != self._view.topic:
            return
        for partition in partitions:
            if self._view.nodes.get(partition) not in (None, self.leader_name(partition)):
                self._view.nodes.pop(partition)

    def encode(self, thread: str) -> bytes:
        return pykafka_layout.encode_owner(thread.rsplit("-", 1)[0])

    def decode(self, data: bytes) -> str:
        return Dialect.PYKAFKA.codec.owner_thread(data)


class LayoutCodec(Protocol):
    """What one dialect defines (the list docs/architecture.md gives)."""

    offsets_in_zookeeper: bool
    """Whether its members commit offsets under `offsets/` (else only Kafka holds them)."""
    assignors: tuple[str, ...]
    """The legacy assignors its members may run (`partition.assignment.strategy` values)."""
    leaders_matter: bool
    """Whether its owner node names and assignment order depend on the partitions' leaders."""

    def decode_registration(self, data: bytes | None) -> Registration:
        """The member's subscription; raises `CorruptNodeError` when `data` is not this dialect's."""
        ...

    def encode_registration(self, registration: Registration) -> bytes:
        """The data of a member's `ids` node in this dialect."""
        ...

    def owner_node(self, folder: str, child: str) -> OwnerNodeName | None:
        """What an `owners/<folder>/<child>` node claims; None when this dialect does not write such a node."""
        ...

    def owner_thread(self, data: bytes | None) -> str:
        """The owner thread id an owner node's data stands for (a consumer id is its thread `-0`)."""
        ...

    def naming(self, nodes: LeaderNamedNodes | None) -> OwnerNaming:
        """How a member of this dialect names owner nodes (`nodes`: where `leaders_matter`)."""
        ...


class ScalaCodec:
    """Kafka's Scala `ZookeeperConsumerConnector` (and this project's bridges): a JSON registration under
    `ids`, owners at `owners/<topic>/<partition>` holding the owning thread id, offsets in ZooKeeper."""

    offsets_in_zookeeper = True
    assignors: tuple[str, ...] = ("range", "roundrobin")
    leaders_matter = False

    def decode_registration(self, data: bytes | None) -> Registration:
        return Registration.decode(data)

    def encode_registration(self, registration: Registration) -> bytes:
        return registration.encode()

    def owner_node(self, folder: str, child: str) -> OwnerNodeName | None:
        if not child.isdigit() or pykafka_layout.spelling_of_folder(folder) != (folder, Spelling.PYTHON2):
            return None
        return OwnerNodeName(TopicPartition(folder, int(child)))

    def owner_thread(self, data: bytes | None) -> str:
        return decode_owner(data)

    def naming(self, nodes: LeaderNamedNodes | None) -> OwnerNaming:
        return ScalaNaming()


class PykafkaCodec:
    """pykafka 2.8.0's `BalancedConsumer` (`protocol/pykafka_layout.py`, docs/pykafka.md): the `ids` node holds
    the topic name's bytes, owners at `owners/<repr(topic bytes)>/<leader>-<partition>` hold the consumer
    id, offsets live in Kafka."""

    offsets_in_zookeeper = False
    assignors: tuple[str, ...] = ("range", "roundrobin")
    leaders_matter = True

    def decode_registration(self, data: bytes | None) -> Registration:
        return pykafka_layout.registration_of(data)

    def encode_registration(self, registration: Registration) -> bytes:
        return pykafka_layout.registration_data(registration)

    def owner_node(self, folder: str, child: str) -> OwnerNodeName | None:
        parsed = pykafka_layout.spelling_of_folder(folder)
        node = OwnerNode.parse(child)
        if parsed is None or node is None:
            return None
        topic, spelling = parsed
        return OwnerNodeName(TopicPartition(topic, node.partition), spelling, node.leader)

    def owner_thread(self, data: bytes | None) -> str:
        return f"{pykafka_layout.decode_owner(data or b'')}-0"

    def naming(self, nodes: LeaderNamedNodes | None) -> OwnerNaming:
        assert nodes is not None, "pykafka names owner nodes after the leaders it reads"
        return PykafkaNaming(nodes)


class Dialect(Enum):
    SCALA = "scala"
    PYKAFKA = "pykafka"

    @property
    def codec(self) -> LayoutCodec:
        return _CODECS[self]

    @property
    def offsets_in_zookeeper(self) -> bool:
        return self.codec.offsets_in_zookeeper


_CODECS: Mapping[Dialect, LayoutCodec] = {Dialect.SCALA: ScalaCodec(), Dialect.PYKAFKA: PykafkaCodec()}


def member_dialect(data: bytes | None) -> tuple[Registration, Dialect]:
    """A member's registration and the dialect it is written in (each dialect tried in `Dialect` order: no
    registration decodes in two); raises the first dialect's `CorruptNodeError` when none decodes it."""
    first: CorruptNodeError | None = None
    for dialect in Dialect:
        try:
            return dialect.codec.decode_registration(data), dialect
        except CorruptNodeError as exc:
            first = first or exc
    assert first is not None
    raise first


def owner_node_dialect(folder: str, child: str) -> tuple[Dialect, OwnerNodeName] | None:
    """The dialect an `owners/<folder>/<child>` node is written in and what it claims; None for no dialect's."""
    for dialect in Dialect:
        if (name := dialect.codec.owner_node(folder, child)) is not None:
            return dialect, name
    return None
