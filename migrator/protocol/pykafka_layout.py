"""The pykafka dialect of the legacy layout: what pykafka 2.8.0's `BalancedConsumer` writes in ZooKeeper.

Beside the Scala layout (CONTRACT §1) under the same `/consumers/<group>`:

- `ids/<consumer_id>`: ephemeral, data = the topic name's bytes (one topic per consumer), id `host:uuid4`;
- `owners/<folder>/<leader>-<partition>`: ephemeral, data = the owner's consumer id. pykafka formats the folder
  from the topic name, which is `bytes` on Python 3, so the folder is the repr `b'<topic>'`; on Python 2 it
  is the plain `<topic>`. The node name carries the partition's leader broker id when it was claimed;
- no offsets: pykafka commits to Kafka under the group id.

Pure: no I/O. `migrator.assign.pykafka` holds the assignment.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from migrator.errors import CorruptNodeError
from migrator.protocol.codecs import PATTERN_STATIC, Registration

_TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_OWNER_NODE_RE = re.compile(r"^(-?\d+)-(\d+)$")


class Spelling(enum.Enum):
    """How the owners folder (and pykafka's partition sort key) spells a topic."""

    PYTHON3 = "python3"
    """`b'<topic>'`: `str()` of the topic's bytes, what pykafka writes on Python 3."""
    PYTHON2 = "python2"
    """`<topic>`: what the same code writes on Python 2."""


def topic_text(topic: str, spelling: Spelling) -> str:
    """The topic as pykafka's `str(topic.name)` prints it: the owners folder name and sort-key prefix."""
    return repr(topic.encode("utf-8")) if spelling is Spelling.PYTHON3 else topic


def owners_folders(topic: str) -> dict[Spelling, str]:
    """Both folder names a pykafka group may use for `topic`."""
    return {spelling: topic_text(topic, spelling) for spelling in Spelling}


def spelling_of_folder(folder: str) -> tuple[str, Spelling] | None:
    """(topic, spelling) of an owners folder name, or None for a name neither spelling produces."""
    if folder.startswith("b'") and folder.endswith("'") and _TOPIC_RE.match(folder[2:-1]):
        return folder[2:-1], Spelling.PYTHON3
    if _TOPIC_RE.match(folder):
        return folder, Spelling.PYTHON2
    return None


@dataclass(frozen=True, slots=True, order=True)
class OwnerNode:
    """One owner node's name: `<leader>-<partition>` (the leader when it was claimed)."""

    leader: int
    partition: int

    @property
    def name(self) -> str:
        return f"{self.leader}-{self.partition}"

    @classmethod
    def parse(cls, name: str) -> OwnerNode | None:
        """None for any other name (e.g. a Scala owner node, which is the bare partition id)."""
        match = _OWNER_NODE_RE.match(name)
        return cls(int(match.group(1)), int(match.group(2))) if match else None


@dataclass(frozen=True, slots=True)
class PartitionNode:
    """One owner node of a partition as read: its name, its owner's consumer id, and when ZooKeeper created it
    (the node's czxid: ZooKeeper orders every create)."""

    name: str
    owner: str
    created: int


def claimed_first(ours: PartitionNode, nodes: Iterable[PartitionNode]) -> PartitionNode | None:
    """The earliest node of `ours`'s partition another member created before `ours`, if any.

    Owner nodes named after leaders do not exclude each other: two members whose views of a partition's
    leader differ create two names, and both creates succeed. So a claim looks at the partition's nodes after
    creating its own, and the later one gives way: a member holding the partition always keeps a node created
    before any later claim's (`rename_waits`), so at most one claim survives."""
    earlier = [n for n in nodes if n.owner != ours.owner and n.created < ours.created]
    return min(earlier, key=lambda n: n.created, default=None)


def rename_waits(owner: str, nodes: Iterable[PartitionNode]) -> bool:
    """Whether a member renaming its node of a partition takes the new name back and keeps the old one: while
    another member's node of the partition exists, that member's claim gives way only on seeing a node of
    ours created before its own (`claimed_first`), and only the old one surely was."""
    return any(n.owner != owner for n in nodes)


def encode_registration(topic: str) -> bytes:
    """The data of `ids/<consumer_id>`: the topic name, as pykafka compares it (`topic == self._topic.name`)."""
    return topic.encode("utf-8")


def decode_registration(data: bytes) -> str | None:
    """The topic a pykafka registration names, or None when `data` is not one (e.g. Scala's JSON)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if _TOPIC_RE.match(text) else None


def encode_owner(consumer_id: str) -> bytes:
    return consumer_id.encode("utf-8")


def decode_owner(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def decode_partition_leader(data: bytes | None) -> int:
    """The leader broker id in `/brokers/topics/<t>/partitions/<p>/state` (-1: none). pykafka's owner node names
    and partition order use the leader its metadata reports; the broker writes the same id here."""
    try:
        obj = json.loads(data or b"")
        return int(obj["leader"])
    except (ValueError, TypeError, KeyError) as exc:
        raise CorruptNodeError(f"partition state is not Kafka's JSON: {exc}") from exc


def registration_of(data: bytes | None) -> Registration:
    """A pykafka `ids` node as the legacy model sees it: one stream of the topic it names."""
    topic = decode_registration(data or b"")
    if topic is None:
        raise CorruptNodeError("not a pykafka registration (the bare topic name)")
    return Registration({topic: 1}, PATTERN_STATIC, 0)


def registration_data(registration: Registration) -> bytes:
    """Our own `ids` data in the pykafka dialect: the one topic a pykafka member consumes."""
    ((topic, _),) = registration.subscription.items()
    return encode_registration(topic)
