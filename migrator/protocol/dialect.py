"""The legacy layouts a ZooKeeper-coordinated consumer may speak under `/consumers/<group>`.

A dialect is one codec of the group's znodes (how a member's registration, an owner claim and an offset are
stored) plus one legacy assignor (which partitions each registered member takes). The read model
(`migrator.protocol.group.Group`) carries the dialect of every member, so each derived fact is asked once,
whichever layout the members speak.
"""

from __future__ import annotations

from enum import Enum
from typing import Protocol

from migrator.errors import CorruptNodeError
from migrator.protocol.codecs import Registration, decode_owner
from migrator.protocol.partition import TopicPartition


class Dialect(Enum):
    SCALA = "scala"
    """Kafka's Scala `ZookeeperConsumerConnector` (and this project's bridges): a JSON registration under
    `ids`, owners at `owners/<topic>/<partition>` holding the owning thread id, offsets in ZooKeeper."""
    PYKAFKA = "pykafka"
    """pykafka's `BalancedConsumer`: the `ids` node holds the topic name's bytes, owners at
    `owners/<repr(topic bytes)>/<leader>-<partition>` hold the consumer id, offsets live in Kafka."""


class LayoutCodec(Protocol):
    """How one dialect stores a member's nodes: what a reader needs to build the read model."""

    @property
    def dialect(self) -> Dialect: ...

    @property
    def offsets_in_zookeeper(self) -> bool:
        """Whether the dialect commits offsets under `offsets/` (else only Kafka holds them)."""
        ...

    def decode_registration(self, data: bytes | None) -> Registration:
        """The member's subscription; raises `CorruptNodeError` when `data` is not this dialect's."""
        ...

    def owner_partition(self, topic_node: str, partition_node: str) -> TopicPartition | None:
        """The partition an `owners/<topic_node>/<partition_node>` node claims; None when not this dialect's."""
        ...

    def decode_owner(self, data: bytes | None) -> str:
        """The owner id an owners node holds (a thread id, or a consumer id)."""
        ...


class ScalaCodec:
    """The Scala connector's layout (CONTRACT §1)."""

    dialect = Dialect.SCALA
    offsets_in_zookeeper = True

    def decode_registration(self, data: bytes | None) -> Registration:
        return Registration.decode(data)

    def owner_partition(self, topic_node: str, partition_node: str) -> TopicPartition | None:
        return TopicPartition(topic_node, int(partition_node)) if partition_node.isdigit() else None

    def decode_owner(self, data: bytes | None) -> str:
        return decode_owner(data)


SCALA = ScalaCodec()


CODECS: tuple[LayoutCodec, ...] = (SCALA,)
"""Every dialect a reader recognises, tried in order (a second dialect's codec is added here)."""


def decode_member(data: bytes | None) -> tuple[Registration, Dialect]:
    """A member's registration and the dialect it is written in; raises the first codec's `CorruptNodeError`
    when no dialect decodes it."""
    first: CorruptNodeError | None = None
    for codec in CODECS:
        try:
            return codec.decode_registration(data), codec.dialect
        except CorruptNodeError as exc:
            first = first or exc
    assert first is not None
    raise first
