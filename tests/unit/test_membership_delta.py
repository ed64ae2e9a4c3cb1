"""Reading only the members that changed (`protocol.membership_delta`) gives what a full read of the `ids`
folder gives, or says it cannot: checked against a model of ZooKeeper's child version over any history of
registrations, deregistrations and re-registrations."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given
from hypothesis import strategies as st

from migrator.protocol.events import Trigger
from migrator.protocol.membership_delta import Listing, merged, only_arrived, to_read
from migrator.zk.paths import GroupPaths
from migrator.zk.registry import Watches

IDS = st.sampled_from(["a", "b", "c", "d"])
SUBSCRIPTIONS = st.sampled_from(["t1", "t2", "t3"])
OPS = st.lists(st.tuples(st.sampled_from(["register", "deregister"]), IDS, SUBSCRIPTIONS), max_size=8)


@dataclass
class Folder:
    """The `ids` folder as ZooKeeper keeps it: each create and delete of a child bumps the child version."""

    nodes: dict[str, str] = field(default_factory=dict)
    cversion: int = 0

    def apply(self, op: str, cid: str, data: str) -> None:
        if op == "register" and cid not in self.nodes:
            self.nodes[cid] = data
            self.cversion += 1
        elif op == "deregister" and cid in self.nodes:
            del self.nodes[cid]
            self.cversion += 1

    def listing(self) -> Listing:
        return Listing(frozenset(self.nodes), self.cversion)


@given(OPS, OPS)
def test_an_incremental_read_equals_a_full_read_or_declines(before: list, between: list) -> None:
    folder = Folder()
    for op in before:
        folder.apply(*op)
    last, last_data = folder.listing(), dict(folder.nodes)
    for op in between:
        folder.apply(*op)
    now = folder.listing()
    wanted = to_read(last, now)
    if wanted is None:
        return  # the caller reads everything
    read = {cid: folder.nodes[cid] for cid in wanted}
    assert merged(last_data, now, read) == folder.nodes


@given(OPS)
def test_only_the_added_members_are_read(between: list) -> None:
    folder = Folder({"a": "t1", "b": "t2"}, cversion=2)
    last = folder.listing()
    for op in between:
        folder.apply(*op)
    wanted = to_read(last, folder.listing())
    assert wanted is None or wanted == frozenset(folder.nodes) - last.children


def test_a_member_registered_again_in_between_is_not_trusted() -> None:
    """Deleted and created again (maybe with another subscription): the same children, two changes."""
    folder = Folder({"a": "t1", "b": "t2"}, cversion=2)
    last = folder.listing()
    folder.apply("deregister", "a", "")
    folder.apply("register", "a", "t3")
    assert folder.listing().children == last.children
    assert to_read(last, folder.listing()) is None


def test_a_join_reads_the_joiner_alone() -> None:
    folder = Folder({"a": "t1", "b": "t2"}, cversion=2)
    last = folder.listing()
    folder.apply("register", "c", "t1")
    assert to_read(last, folder.listing()) == {"c"}
    assert merged({"a": "t1", "b": "t2"}, folder.listing(), {"c": "t1"}) == {"a": "t1", "b": "t2", "c": "t1"}


def test_a_member_gone_before_its_read_is_left_out() -> None:
    assert merged({"a": "t1"}, Listing(frozenset({"a", "c"}), 3), {}) == {"a": "t1"}


def test_only_a_members_own_arrival_is_recognised() -> None:
    assert only_arrived(frozenset({"a"}), frozenset({"a", "me"}), "me")
    assert not only_arrived(frozenset({"a"}), frozenset({"me"}), "me")  # and a left
    assert not only_arrived(frozenset({"a"}), frozenset({"a", "me", "b"}), "me")
    assert not only_arrived(frozenset({"a"}), frozenset({"a", "b"}), "me")


def test_a_members_own_registration_fires_no_rebalance_but_any_other_change_does() -> None:
    """The member listing watch (armed before the member registers) as `Watches` builds it; the ZooKeeper
    client is not touched by the callback."""
    posted: list[Trigger] = []
    watches = Watches(None, GroupPaths("g"), posted.append, bridge=True, own_id="me")  # type: ignore[arg-type]
    on_children = watches._members_trigger(Trigger.IDS)
    on_children(["a"])  # armed
    on_children(["a", "me"])  # we registered
    assert posted == []
    on_children(["a", "me", "b"])
    on_children(["me", "b"])
    assert posted == [Trigger.IDS, Trigger.IDS]
