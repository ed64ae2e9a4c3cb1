"""The legacy assignment each dialect's members compute, by the names its codec lists (`LayoutCodec.assignors`).

`protocol` may not import `assign`, so the assignors of a dialect are found here, keyed by the `Dialect`
value: a dialect whose members run other assignors adds its entry. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from migrator.assign.legacy import ASSIGNORS, context_from_subscriptions
from migrator.assign.model import ThreadId
from migrator.assign.pykafka import PykafkaProtocol, assign_threads
from migrator.protocol.dialect import Dialect
from migrator.protocol.partition import TopicPartition
from migrator.protocol.pykafka_layout import Spelling

Assignment = dict[TopicPartition, ThreadId]
Subscriptions = Mapping[str, Mapping[str, int]]
"""consumerId -> topic -> streams."""


def _scala(
    subs: Subscriptions, partitions: Mapping[str, Sequence[int]], _spelling: Spelling, _leaders: Mapping
) -> dict[str, Assignment]:
    ctx = context_from_subscriptions("assignment", subs, partitions)
    return {name: dict(ASSIGNORS[name](ctx)) for name in Dialect.SCALA.codec.assignors}


def _pykafka(
    subs: Subscriptions, _partitions: Mapping[str, Sequence[int]], spelling: Spelling, leaders: Mapping
) -> dict[str, Assignment]:
    topics = sorted({t for sub in subs.values() for t in sub})
    threads = {t: [f"{cid}-0" for cid, sub in sorted(subs.items()) if t in sub] for t in topics}
    return {
        f"pykafka {name}": dict(assign_threads(PykafkaProtocol(name), spelling, threads, leaders))
        for name in Dialect.PYKAFKA.codec.assignors
    }


_BY_DIALECT: Mapping[Dialect, Callable[..., dict[str, Assignment]]] = {Dialect.SCALA: _scala, Dialect.PYKAFKA: _pykafka}


def dialect_assignments(
    dialect: Dialect,
    subscriptions: Subscriptions,
    partitions: Mapping[str, Sequence[int]],
    spelling: Spelling,
    leaders: Mapping[str, Mapping[int, int]],
) -> dict[str, Assignment]:
    """Each assignor's assignment of the group (named as status shows it): `partitions` per topic for a dialect
    that assigns over partition ids, `leaders` (and the folder `spelling`) for one that orders by leader."""
    return _BY_DIALECT[dialect](subscriptions, partitions, spelling, leaders)
