"""Thread-level subdivision under Kafka authority (CONTRACT §5): Java RoundRobinAssignor semantics."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from migrator.assign.subdivide import global_thread_assignment, java_roundrobin, subdivide
from migrator.protocol.partition import TopicPartition as TP

# ---------------------------------------------------------------- java_roundrobin, the Javadoc examples


def test_java_roundrobin_identical_subscriptions() -> None:
    got = java_roundrobin({"t0": 3, "t1": 3}, {"C1": ["t0", "t1"], "C0": ["t1", "t0"]})
    assert got == {"C0": [TP("t0", 0), TP("t0", 2), TP("t1", 1)], "C1": [TP("t0", 1), TP("t1", 0), TP("t1", 2)]}


def test_java_roundrobin_differing_subscriptions_skip_members() -> None:
    subs = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
    got = java_roundrobin({"t0": 1, "t1": 2, "t2": 3}, subs)
    assert got == {
        "C0": [TP("t0", 0)],
        "C1": [TP("t1", 0)],
        "C2": [TP("t1", 1), TP("t2", 0), TP("t2", 1), TP("t2", 2)],
    }


def test_java_roundrobin_unknown_topic_and_idle_member() -> None:
    got = java_roundrobin({"t": 2}, {"a": ["t", "missing"], "b": []})
    assert got == {"a": [TP("t", 0), TP("t", 1)], "b": []}


def test_java_roundrobin_sorts_members_and_topics_by_utf16_units() -> None:
    # Java String order puts U+1F600 (unit D83D) before U+E000; Python code-point order is the reverse.
    smile, private = "\U0001f600", "\ue000"
    got = java_roundrobin({smile: 1, private: 1}, {private: [private, smile], smile: [private, smile]})
    assert got == {smile: [TP(smile, 0)], private: [TP(private, 0)]}
    assert java_roundrobin({smile: 1, private: 1}, {"m": [private, smile]}) == {"m": [TP(smile, 0), TP(private, 0)]}


# ---------------------------------------------------------------- subdivide, worked examples


def test_subdivide_worked_example() -> None:
    got = subdivide("g_c1", {"t": 2}, [TP("t", 12), TP("t", 3), TP("t", 9), TP("t", 7)])
    assert got == {TP("t", 3): "g_c1-0", TP("t", 7): "g_c1-1", TP("t", 9): "g_c1-0", TP("t", 12): "g_c1-1"}


def test_subdivide_orders_threads_as_strings() -> None:
    # 11 threads sort g-0, g-1, g-10, g-2, …: relative partition 2 goes to g-10.
    got = subdivide("g", {"t": 11}, [TP("t", p) for p in range(11)])
    assert [got[TP("t", p)] for p in range(11)] == ["g-0", "g-1", "g-10"] + [f"g-{i}" for i in range(2, 10)]


def test_subdivide_threads_subscribe_by_stream_count() -> None:
    # Thread 0 reads a and b, thread 1 only a. Sorted partitions a-0, a-5, b-1, b-2 dealt over g-0, g-1:
    # a-0 -> g-0, a-5 -> g-1, b-1 -> g-0, b-2: g-1 does not read b, skipped -> g-0.
    got = subdivide("g", {"a": 2, "b": 1}, [TP("b", 2), TP("a", 5), TP("b", 1), TP("a", 0)])
    assert got == {TP("a", 0): "g-0", TP("a", 5): "g-1", TP("b", 1): "g-0", TP("b", 2): "g-0"}


def test_subdivide_deals_topics_in_java_string_order() -> None:
    got = subdivide("g", {"\ue000": 2, "\U0001f600": 2}, [TP("\ue000", 4), TP("\U0001f600", 8)])
    assert got == {TP("\U0001f600", 8): "g-0", TP("\ue000", 4): "g-1"}


def test_subdivide_leaves_out_topics_without_streams() -> None:
    assert subdivide("g", {"a": 1, "z": 0}, [TP("a", 0), TP("z", 0), TP("other", 1)]) == {TP("a", 0): "g-0"}


def test_global_thread_assignment_bridges_and_plain_consumers() -> None:
    members = {
        "g_c1": [TP("t", 3), TP("t", 7), TP("t", 9), TP("t", 12)],
        "consumer-1-4f2e": [TP("t", 0), TP("u", 1)],
    }
    got = global_thread_assignment(members, {"g_c1": {"t": 2}, "g_unused": {"t": 1}})
    assert got == {
        TP("t", 3): "g_c1-0", TP("t", 7): "g_c1-1", TP("t", 9): "g_c1-0", TP("t", 12): "g_c1-1",
        TP("t", 0): "consumer-1-4f2e-0", TP("u", 1): "consumer-1-4f2e-0",
    }  # fmt: skip


def test_global_thread_assignment_rejects_overlap() -> None:
    with pytest.raises(ValueError, match="t-1"):
        global_thread_assignment({"a": [TP("t", 1)], "b": [TP("t", 1)]}, {})


# ---------------------------------------------------------------- properties

TOPICS = ["t", "u", "t10", "t2", "Aa", "BB"]
assigned_st = st.sets(st.builds(TP, st.sampled_from(TOPICS), st.integers(0, 60)), max_size=40)
streams_st = st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 12), max_size=len(TOPICS))


@given(streams_st, assigned_st)
def test_subdivision_partitions_the_assigned_set(streams, assigned) -> None:
    got = subdivide("g_c", streams, assigned)
    assert set(got) == {tp for tp in assigned if streams.get(tp.topic, 0) > 0}
    for tp, thread in got.items():
        prefix, _, index = thread.rpartition("-")
        assert prefix == "g_c"
        assert int(index) < streams[tp.topic]


@given(streams_st, assigned_st, st.randoms(use_true_random=False))
def test_subdivision_is_deterministic(streams, assigned, rnd) -> None:
    items = list(streams.items())
    rnd.shuffle(items)
    shuffled = list(assigned)
    rnd.shuffle(shuffled)
    assert subdivide("g_c", dict(items), shuffled) == subdivide("g_c", streams, sorted(assigned))


@given(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True), st.integers(1, 12), assigned_st)
def test_subdivision_balances_each_topic_when_threads_read_the_same_topics(topics, streams, assigned) -> None:
    got = subdivide("g_c", dict.fromkeys(topics, streams), assigned)
    for topic in topics:
        counts = Counter(th for tp, th in got.items() if tp.topic == topic)
        k = sum(1 for tp in assigned if tp.topic == topic)
        per_thread = [counts[f"g_c-{i}"] for i in range(streams)]
        assert all(k // streams <= n <= k // streams + 1 for n in per_thread)


@given(
    st.lists(assigned_st, min_size=1, max_size=4),
    st.lists(st.one_of(st.none(), streams_st), min_size=4, max_size=4),
)
def test_global_assignment_covers_exactly_the_union(parts_lists, stream_maps) -> None:
    members: dict[str, set[TP]] = {}
    bridges: dict[str, dict[str, int]] = {}
    taken: set[TP] = set()
    for i, parts in enumerate(parts_lists):
        key, streams = f"m{i}", stream_maps[i]
        mine = parts - taken  # Kafka never hands one partition to two members
        if streams is not None:
            # A bridge streams every topic it was assigned (it subscribes to the same topics).
            streams = {**streams, **{tp.topic: max(1, streams.get(tp.topic, 0)) for tp in mine}}
            bridges[key] = streams
        members[key] = mine
        taken |= mine
    got = global_thread_assignment(members, bridges)
    assert set(got) == taken
    for key, mine in members.items():
        for tp in mine:
            assert got[tp].rpartition("-")[0] == key
            if key not in bridges:
                assert got[tp] == f"{key}-0"
