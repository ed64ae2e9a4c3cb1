"""A consumer group written by hand in one dialect's layout: members registered under `ids` and every partition
owned (range order), as that dialect's members leave them; for reading commands that only look at the nodes."""

from __future__ import annotations

from kazoo.client import KazooClient

from migrator.protocol.codecs import PATTERN_STATIC, Registration
from migrator.protocol.dialect import Dialect
from migrator.protocol.pykafka_layout import OwnerNode, Spelling, decode_partition_leader, registration_data, topic_text
from migrator.zk.paths import GroupPaths, partition_state


def write_group(zk: KazooClient, group: str, topic: str, partitions: int, members: int, dialect: Dialect) -> None:
    """`members` members of `dialect` consuming `topic` (which must exist), owning its `partitions` in turn."""
    paths = GroupPaths(group)
    ids = [f"{group}_m{i:03d}" for i in range(members)]
    registration = Registration({topic: 1}, PATTERN_STATIC, 0)
    data = registration.encode() if dialect is Dialect.SCALA else registration_data(registration)
    for cid in ids:
        zk.create(paths.member(cid), data, makepath=True)
    for partition in range(partitions):
        owner = ids[partition % members]
        if dialect is Dialect.SCALA:
            path, owned_by = paths.owner(topic, partition), f"{owner}-0".encode()
        else:
            name = OwnerNode(decode_partition_leader(zk.get(partition_state(topic, partition))[0]), partition).name
            path, owned_by = f"{paths.owners}/{topic_text(topic, Spelling.PYTHON3)}/{name}", owner.encode()
        zk.create(path, owned_by, makepath=True)
