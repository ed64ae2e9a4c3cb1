"""Which dialect of the legacy layout a group's nodes are written in: Scala's or pykafka's, never a guess.

The evidence is what a reader lists under `/consumers/<group>`: the data of every `ids` node and the child
names of every `owners` folder. A Scala member registers JSON and names owner nodes by partition id; a
pykafka member registers the bare topic name and names owner nodes `<leader>-<partition>`, under `b'<topic>'`
(Python 3) or `<topic>` (Python 2). A group with evidence of both, or with a node neither writes, is
refused with the node that decided it: an operator command must not act on a layout it cannot read.

Pure.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from migrator.errors import CorruptNodeError
from migrator.protocol.dialect import Dialect, OwnerRead, member_dialect, owner_node_dialect
from migrator.protocol.pykafka_layout import Spelling


class Refusal(enum.Enum):
    UNREADABLE = "unreadable"
    """A node matches neither dialect."""
    MIXED = "mixed"
    """Nodes of both dialects (or of both pykafka spellings) in one group."""


@dataclass(frozen=True, slots=True)
class LayoutEvidence:
    ids: Mapping[str, bytes] = field(default_factory=dict)
    """consumer id -> data of `ids/<consumer id>`."""
    owners: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """owners folder name -> the names of its children."""


@dataclass(frozen=True, slots=True)
class Recognition:
    """`dialect` None with `refusal` None: an empty group (either dialect may start it)."""

    dialect: Dialect | None = None
    spelling: Spelling | None = None
    """For pykafka, the owners folder spelling when an owner node shows it."""
    refusal: Refusal | None = None
    detail: str = ""
    """For people: the node that decided a refusal."""

    @property
    def name(self) -> str:
        """The dialect as status output names it: `scala`, `pykafka (python3)`, `pykafka`, or `-`."""
        if self.dialect is None:
            return "-"
        return f"{self.dialect.value} ({self.spelling.value})" if self.spelling else self.dialect.value


Vote = tuple[Dialect, Spelling | None]


def _id_vote(data: bytes) -> Vote | None:
    try:
        return (member_dialect(data)[1], None)
    except CorruptNodeError:
        return None


def _owner_vote(folder: str, child: str) -> Vote | None:
    found = owner_node_dialect(folder, child)
    return None if found is None else (found[0], found[1].spelling)


def _votes(evidence: LayoutEvidence) -> tuple[list[tuple[str, Vote]], str | None]:
    """Each node's vote, and the first node (sorted) that matches no dialect."""
    votes: list[tuple[str, Vote]] = []
    for cid, data in sorted(evidence.ids.items()):
        vote = _id_vote(data)
        if vote is None:
            return votes, f"ids/{cid}"
        votes.append((f"ids/{cid}", vote))
    for folder, children in sorted(evidence.owners.items()):
        for child in sorted(children):
            vote = _owner_vote(folder, child)
            if vote is None:
                return votes, f"owners/{folder}/{child}"
            votes.append((f"owners/{folder}/{child}", vote))
    return votes, None


def recognise(evidence: LayoutEvidence) -> Recognition:
    votes, unreadable = _votes(evidence)
    if unreadable is not None:
        return Recognition(
            refusal=Refusal.UNREADABLE, detail=f"{unreadable} matches neither the Scala nor the pykafka layout"
        )
    dialects = {dialect for _, (dialect, _) in votes}
    spellings = {spelling for _, (_, spelling) in votes if spelling is not None}
    if len(dialects) > 1 or len(spellings) > 1:
        first = {vote: node for node, vote in reversed(votes)}
        shown = ", ".join(f"{node} ({d.value}{f' {s.value}' if s else ''})" for (d, s), node in sorted(
            first.items(), key=lambda item: item[1]))  # fmt: skip
        return Recognition(refusal=Refusal.MIXED, detail=f"nodes of more than one layout: {shown}")
    if not dialects:
        return Recognition()
    return Recognition(dialect=dialects.pop(), spelling=spellings.pop() if spellings else None)


@dataclass(frozen=True, slots=True)
class GroupLayout:
    """A group's recognised dialect and, when they were read, the partition leaders of its topics (pykafka's
    owner node names and assignment order depend on them)."""

    recognition: Recognition = field(default_factory=Recognition)
    leaders: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    """topic -> partition -> leader broker id."""
    owner_nodes: tuple[OwnerRead, ...] = ()
    """Every owner node read, of whichever dialect (the view's `owners` keeps the recognised dialect's)."""

    @property
    def dialect(self) -> Dialect | None:
        return self.recognition.dialect

    @property
    def word(self) -> str | None:
        """`scala` or `pykafka` as `--json` output names it; None for an empty or unrecognised group."""
        return self.dialect.value if self.dialect is not None else None

    @property
    def spelling(self) -> Spelling:
        return self.recognition.spelling or Spelling.PYTHON3

    @property
    def unrecognised(self) -> str | None:
        """Why no dialect can be trusted (the node that decided it); None when one (or none yet) is."""
        return self.recognition.detail if self.recognition.refusal is not None else None
