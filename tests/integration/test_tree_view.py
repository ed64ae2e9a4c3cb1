"""`cleanup` decides over one read of a group: its tree (`read_tree`), and the group as the group reader sees it
derived from that tree (`view_of_tree`). Property: on any group the real ZooKeeper holds, in either dialect or
none, with bridges, corrupt nodes and stray names, the view from the tree is the group reader's own read."""

from __future__ import annotations

import itertools
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kazoo.client import KazooClient

from migrator.protocol import pykafka_layout
from migrator.protocol.codecs import Authority, PublishedAuthority, Registration, encode_offset, encode_owner
from migrator.zk.archive import read_tree, view_of_tree
from migrator.zk.group_reader import read_group_with_layout
from migrator.zk.paths import GroupPaths

TOPICS = ("orders", "events")
_groups = itertools.count()

member = st.tuples(st.sampled_from(["scala", "pykafka", "corrupt"]), st.sampled_from(TOPICS), st.booleans())
owner = st.tuples(
    st.sampled_from(["scala", "pykafka3", "pykafka2", "stray"]), st.sampled_from(TOPICS), st.integers(0, 2)
)
offset = st.tuples(st.sampled_from(TOPICS), st.sampled_from(["0", "1", "x"]), st.sampled_from([b"7", b"12", b"-"]))
shape = st.fixed_dictionaries(
    {
        "members": st.lists(member, max_size=4),
        "mode": st.sampled_from([None, b"zookeeper", b"kafka", b"??"]),
        "owners": st.lists(owner, max_size=4, unique_by=lambda o: o[1:]),
        "offsets": st.lists(offset, max_size=4, unique_by=lambda o: o[:2]),
        "authority": st.sampled_from(["none", "published", "corrupt"]),
    }
)


def _write(zk: KazooClient, group: str, shape: dict) -> None:
    paths = GroupPaths(group)
    zk.ensure_path(paths.ids)
    ids = []
    for i, (dialect, topic, bridge) in enumerate(shape["members"]):
        cid = f"{group}_h-{i}-a" if dialect != "pykafka" else f"h{i}:5f0c8b2e-0000-4000-8000-00000000000{i}"
        data = {
            "scala": Registration({topic: 1}, timestamp_ms=1_700_000_000_000).encode(),
            "pykafka": pykafka_layout.encode_registration(topic),
            "corrupt": b"{not json",
        }[dialect]
        zk.create(paths.member(cid), data)
        ids.append(cid)
        if bridge and dialect == "scala":
            zk.create(paths.migration_member(cid), data, makepath=True)
            if shape["authority"] != "none":
                pub = PublishedAuthority(Authority.KAFKA, 3, 1_700_000_000_000, kafka_member_id=cid, partitions=1)
                body = pub.encode() if shape["authority"] == "published" else b"{"
                zk.create(paths.published_authority(cid), body, makepath=True)
    if shape["mode"] is not None:
        zk.create(paths.mode, shape["mode"], makepath=True)
        zk.set(paths.mode, shape["mode"])  # its version and mtime are no longer its creation's
    for kind, topic, p in shape["owners"]:
        folder, name = {
            "scala": (topic, str(p)),
            "pykafka3": (pykafka_layout.topic_text(topic, pykafka_layout.Spelling.PYTHON3), f"1-{p}"),
            "pykafka2": (topic, f"2-{p}"),
            "stray": (topic, f"x{p}"),
        }[kind]
        zk.create(f"{paths.owners}/{folder}/{name}", encode_owner(ids[0] if ids else "gone"), makepath=True)
    for topic, name, data in shape["offsets"]:
        zk.create(f"{paths.offsets_topic(topic)}/{name}", data if name != "1" else encode_offset(5), makepath=True)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(shape)
def test_the_view_derived_from_the_tree_is_the_group_readers_own(zk_client: KazooClient, shape: dict) -> None:
    group = f"treeview-{int(time.time() * 1000)}-{next(_groups)}"
    try:
        _write(zk_client, group, shape)
        read = read_group_with_layout(zk_client, group)
        derived = view_of_tree(read_tree(zk_client, group))
        assert derived == read
    finally:
        zk_client.delete(GroupPaths(group).root, recursive=True)
