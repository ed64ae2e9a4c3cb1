"""`offsets export|import|diff|sync`: moving committed offsets between ZooKeeper and Kafka.

Two rules keep this from losing records:
- sync never moves an offset backwards: a partition's target is max(ZooKeeper, Kafka) (CONTRACT §4,
  the same rule a dual-committing connector uses when it fetches);
- a file is validated whole before anything is written, and a Kafka write needs an empty Kafka group,
  so a bad line or a broker refusal half-way cannot leave a half-imported group.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from migrator.errors import RefusedError, UsageError
from migrator.kafka.admin import KafkaAdmin
from migrator.names import validate_topic
from migrator.ops.dialect import refuse_unrecognised, require_zookeeper_offsets
from migrator.ops.groups import require_exists
from migrator.protocol.group_view import GroupView
from migrator.protocol.layout_dialect import GroupLayout
from migrator.protocol.partition import TopicPartition
from migrator.protocol.stores import OffsetStore
from migrator.zk.group_reader import read_group, read_group_with_layout
from migrator.zk.offsets import write_offsets
from migrator.zk.paths import GroupPaths
from migrator.zk.session import ZkSession

FORMATS = ("json", "csv")
CSV_HEADER = ("topic", "partition", "offset")

Offsets = dict[TopicPartition, int]


# --- pure ---------------------------------------------------------------------------------------


def encode(offsets: Mapping[TopicPartition, int], fmt: str, *, group: str, store: OffsetStore) -> str:
    rows = sorted(offsets.items())
    if fmt == "json":
        doc = {
            "group": group,
            "store": store,
            "offsets": [{"topic": tp.topic, "partition": tp.partition, "offset": off} for tp, off in rows],
        }
        return json.dumps(doc, indent=2) + "\n"
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    writer.writerows((tp.topic, tp.partition, off) for tp, off in rows)
    return out.getvalue()


def _entry(topic: object, partition: object, offset: object, where: str) -> tuple[TopicPartition, int]:
    if not isinstance(topic, str):
        raise UsageError(f"{where}: topic must be a string")
    try:
        validate_topic(topic)
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from exc
    numbers = []
    for name, value in (("partition", partition), ("offset", offset)):
        text = str(value).strip() if not isinstance(value, bool) else ""
        if not (text.isascii() and text.isdigit()):  # int() refuses digits like "¹"
            raise UsageError(f"{where}: {name} {value!r} is not a non-negative integer")
        numbers.append(int(text))
    return TopicPartition(topic, numbers[0]), numbers[1]


def parse(text: str) -> Offsets:
    """Offsets from an export (JSON or CSV, detected by the first character); any bad entry raises UsageError."""
    entries: list[tuple[TopicPartition, int]] = []
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"input is not valid JSON: {exc}") from exc
        items = doc.get("offsets") if isinstance(doc, dict) else None
        if not isinstance(items, list):
            raise UsageError('input JSON has no "offsets" list')
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise UsageError(f"offsets[{i}]: not an object")
            entries.append(_entry(item.get("topic"), item.get("partition"), item.get("offset"), f"offsets[{i}]"))
    else:
        rows = list(csv.reader(io.StringIO(text)))
        for lineno, row in enumerate(rows, start=1):
            if not row or (lineno == 1 and tuple(c.strip() for c in row) == CSV_HEADER):
                continue
            if len(row) != 3:
                raise UsageError(f"line {lineno}: expected topic,partition,offset, got {len(row)} fields")
            entries.append(_entry(row[0].strip(), row[1], row[2], f"line {lineno}"))
    offsets: Offsets = {}
    for tp, off in entries:
        if tp in offsets and offsets[tp] != off:
            raise UsageError(f"{tp} appears twice with different offsets ({offsets[tp]} and {off})")
        offsets[tp] = off
    if not offsets:
        raise UsageError("input holds no offsets")
    return offsets


@dataclass(frozen=True, slots=True)
class DiffRow:
    partition: TopicPartition
    zookeeper: int | None
    kafka: int | None

    @property
    def delta(self) -> int | None:
        """kafka - zookeeper; negative means Kafka is behind (plain consumers would re-read)."""
        if self.zookeeper is None or self.kafka is None:
            return None
        return self.kafka - self.zookeeper

    @property
    def state(self) -> str:
        if self.zookeeper is None:
            return "kafka only"
        if self.kafka is None:
            return "zookeeper only"
        return "equal" if self.delta == 0 else ("kafka behind" if (self.delta or 0) < 0 else "kafka ahead")


def diff(zk: Mapping[TopicPartition, int], kafka: Mapping[TopicPartition, int]) -> list[DiffRow]:
    return [DiffRow(tp, zk.get(tp), kafka.get(tp)) for tp in sorted(set(zk) | set(kafka))]


def sync_plan(source: Mapping[TopicPartition, int], target: Mapping[TopicPartition, int]) -> Offsets:
    """What to write into the target store: max(source, target) where that differs from the target."""
    plan: Offsets = {}
    for tp, off in source.items():
        best = max(off, target.get(tp, -1))
        if best != target.get(tp):
            plan[tp] = best
    return plan


def check_topics(existing: Mapping[str, tuple[int, ...] | None]) -> None:
    """Refuse a --topic the cluster does not have: a read filtered by it would silently show nothing."""
    for topic, ids in sorted(existing.items()):
        if ids is None:
            raise UsageError(f"topic {topic} does not exist in Kafka")


def check_partitions(offsets: Iterable[TopicPartition], existing: Mapping[str, tuple[int, ...] | None]) -> None:
    """Refuse offsets for topics or partitions the brokers do not have (UsageError, nothing written)."""
    for tp in sorted(offsets):
        ids = existing.get(tp.topic)
        if ids is None:
            raise UsageError(f"topic {tp.topic} does not exist in Kafka")
        if tp.partition not in ids:
            raise UsageError(f"topic {tp.topic} has no partition {tp.partition} (it has {len(ids)})")


# --- I/O ----------------------------------------------------------------------------------------


def known_partitions(view: GroupView, admin: KafkaAdmin | None, topics: Iterable[str] = ()) -> list[TopicPartition]:
    """Partitions the group has anything for: ZooKeeper offsets and owners, plus its topics' partitions."""
    tps = set(view.offsets) | set(view.owners)
    if admin is not None:
        for topic in sorted(set(view.topics) | {tp.topic for tp in tps} | set(topics)):
            tps |= {TopicPartition(topic, p) for p in admin.partitions(topic) or ()}
    return sorted(tps)


def store_offsets(store: OffsetStore, view: GroupView, admin: KafkaAdmin | None, topics: Iterable[str] = ()) -> Offsets:
    """The committed next offsets in `store` (of `topics`; all without): ZooKeeper's as `view` read them,
    Kafka's of the partitions `view` knows of."""
    if store is OffsetStore.ZOOKEEPER:
        wanted = set(topics)
        return {tp: o for tp, o in view.offsets.items() if not wanted or tp.topic in wanted}
    if admin is None:
        raise UsageError("--store kafka needs --bootstrap-servers")
    committed = admin.committed_offsets(view.group, known_partitions(view, admin, topics))
    return {tp: o for tp, o in committed.items() if o >= 0}


def read_store(
    store: OffsetStore, zk: ZkSession, group: str, admin: KafkaAdmin | None, topics: Iterable[str] = ()
) -> tuple[GroupView, Offsets]:
    """The group read now, and its offsets in `store` (`store_offsets`)."""
    view = read_group(zk, group)
    return view, store_offsets(store, view, admin, topics)


def read_checked(
    zk: ZkSession, group: str, stores: Iterable[OffsetStore], use: str, *, must_exist: bool = True
) -> tuple[GroupView, GroupLayout]:
    """The group in one pipelined pass, refusing a missing group (unless not `must_exist`: an import may make
    it), a layout neither dialect explains, and `use` of ZooKeeper offsets on a dialect that keeps none there."""
    view, layout = read_group_with_layout(zk, group)
    if must_exist:
        require_exists(zk, view)
    refuse_unrecognised(layout, group)
    if OffsetStore.ZOOKEEPER in set(stores):
        require_zookeeper_offsets(layout, group, use)
    return view, layout


def write_zookeeper(zk: ZkSession, group: str, offsets: Mapping[TopicPartition, int]) -> None:
    write_offsets(zk, GroupPaths(group), offsets)


def require_empty_kafka_group(admin: KafkaAdmin, group: str) -> None:
    kafka = admin.describe_group(group)
    if not kafka.is_empty:
        who = ", ".join(sorted(m.client_id for m in kafka.members)[:5])
        raise RefusedError(
            f"the Kafka group {group} has {len(kafka.members)} live member(s) ({who}); the broker rejects offset "
            "commits for a non-empty group: stop them (or commit through the bridges) and retry"
        )


def write_kafka(admin: KafkaAdmin, group: str, offsets: Mapping[TopicPartition, int]) -> None:
    require_empty_kafka_group(admin, group)
    admin.alter_offsets(group, offsets)
