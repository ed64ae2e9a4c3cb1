"""Legacy range / roundrobin assignors (CONTRACT §2): worked examples and properties."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from migrator.assign.legacy import (
    ASSIGNORS,
    AssignmentContext,
    context_from_subscriptions,
    own_partitions,
    range_assign,
    roundrobin_assign,
)
from migrator.assign.model import consumer_of_thread
from migrator.protocol.partition import TopicPartition as TP


def ctx_of(subs: dict[str, dict[str, int]], parts: dict[str, list[int]], me: str = "x") -> AssignmentContext:
    return context_from_subscriptions(me, subs, parts)


# ---------------------------------------------------------------- range, worked examples


def test_range_three_consumers_two_streams_twelve_partitions() -> None:
    subs = {c: {"t": 2} for c in ("g_c1", "g_c2", "g_c3")}
    assert range_assign(ctx_of(subs, {"t": list(range(12))})) == {
        TP("t", 0): "g_c1-0", TP("t", 1): "g_c1-0",
        TP("t", 2): "g_c1-1", TP("t", 3): "g_c1-1",
        TP("t", 4): "g_c2-0", TP("t", 5): "g_c2-0",
        TP("t", 6): "g_c2-1", TP("t", 7): "g_c2-1",
        TP("t", 8): "g_c3-0", TP("t", 9): "g_c3-0",
        TP("t", 10): "g_c3-1", TP("t", 11): "g_c3-1",
    }  # fmt: skip


def test_range_sorts_threads_as_strings_so_ten_precedes_two() -> None:
    # 11 threads c-0 … c-10 sort as c-0, c-1, c-10, c-2, …, c-9.
    got = range_assign(ctx_of({"c": {"t": 11}}, {"t": list(range(11))}))
    expected_threads = ["c-0", "c-1", "c-10"] + [f"c-{i}" for i in range(2, 10)]
    assert [got[TP("t", p)] for p in range(11)] == expected_threads


def test_range_uneven_first_threads_take_the_extra() -> None:
    got = range_assign(ctx_of({"a": {"t": 1}, "b": {"t": 1}, "c": {"t": 1}}, {"t": [0, 1, 2, 3, 4]}))
    assert got == {TP("t", 0): "a-0", TP("t", 1): "a-0", TP("t", 2): "b-0", TP("t", 3): "b-0", TP("t", 4): "c-0"}


def test_range_scaladoc_example_and_sparse_partition_ids() -> None:
    # The Scala RangeAssignor doc: C1, C2 with two streams each, five partitions.
    got = range_assign(ctx_of({"C1": {"t": 2}, "C2": {"t": 2}}, {"t": [40, 10, 20, 0, 30]}))
    assert got == {TP("t", 0): "C1-0", TP("t", 10): "C1-0", TP("t", 20): "C1-1", TP("t", 30): "C2-0",
                   TP("t", 40): "C2-1"}  # fmt: skip


def test_range_more_threads_than_partitions_leaves_last_threads_idle() -> None:
    got = range_assign(ctx_of({"a": {"t": 3}}, {"t": [0, 1]}))
    assert got == {TP("t", 0): "a-0", TP("t", 1): "a-1"}


def test_threads_sort_by_utf16_units_like_java() -> None:
    # Java puts "m\U0001f600-0" (unit D83D) before "m\ue000-0"; Python code-point order is the reverse.
    subs = {"m\ue000": {"t": 1}, "m\U0001f600": {"t": 1}}
    expected = {TP("t", 0): "m\U0001f600-0", TP("t", 1): "m\ue000-0"}  # [t,0] hashes below [t,1]
    assert range_assign(ctx_of(subs, {"t": [0, 1]})) == expected
    assert roundrobin_assign(ctx_of(subs, {"t": [0, 1]})) == expected


# ---------------------------------------------------------------- roundrobin, worked examples
# Hashes of "[topic,partition]" (worked by hand, see test_javahash for the method):
#   [a,10] -> -1598773544   [a,0] -> 86974003   [b,0] -> 87003794   [b,1] -> 87003825
# so the deal order is a-10, a-0, b-0, b-1: not lexical, and the negative hash must sort first.
PARTS_AB = {"a": [0, 10], "b": [0, 1]}


def test_roundrobin_hash_order_identical_subscriptions() -> None:
    got = roundrobin_assign(ctx_of({"c1": {"a": 1, "b": 1}, "c2": {"a": 1, "b": 1}}, PARTS_AB))
    assert got == {TP("a", 10): "c1-0", TP("a", 0): "c2-0", TP("b", 0): "c1-0", TP("b", 1): "c2-0"}


def test_roundrobin_skipped_thread_loses_its_turn() -> None:
    # Cycle c1-0, c2-0, c3-0; c2 only reads b.
    # a-10 -> c1-0; a-0: c2-0 skipped -> c3-0; b-0 -> c1-0 (wrapped); b-1 -> c2-0.
    subs = {"c1": {"a": 1, "b": 1}, "c2": {"b": 1}, "c3": {"a": 1, "b": 1}}
    got = roundrobin_assign(ctx_of(subs, PARTS_AB))
    assert got == {TP("a", 10): "c1-0", TP("a", 0): "c3-0", TP("b", 0): "c1-0", TP("b", 1): "c2-0"}


def test_roundrobin_hash_tie_keeps_topic_order() -> None:
    # "[Aa,0]" and "[BB,0]" share hashCode -1626752098; the stable sort keeps Aa (sorted first) first.
    got = roundrobin_assign(ctx_of({"x": {"Aa": 1, "BB": 1}, "y": {"Aa": 1, "BB": 1}}, {"BB": [0], "Aa": [0]}))
    assert got == {TP("Aa", 0): "x-0", TP("BB", 0): "y-0"}


def test_assignors_registry_and_skipped_topics() -> None:
    assert set(ASSIGNORS) == {"range", "roundrobin"}
    assert ASSIGNORS["range"] is range_assign
    assert ASSIGNORS["roundrobin"] is roundrobin_assign
    ctx = ctx_of({"a": {"t": 1, "gone": 2, "empty": 1, "zero": 0}}, {"t": [0], "empty": [], "zero": [0]})
    assert ctx.thread_ids_per_topic == {"t": ("a-0",)}
    assert ctx.partitions_per_topic == {"t": (0,)}


def test_own_partitions_keeps_only_this_members_threads() -> None:
    assignment = {TP("t", 0): "g_c1-0", TP("t", 1): "g_c1-1", TP("t", 2): "g_c10-0", TP("t", 3): "g_c-1"}
    assert own_partitions(assignment, "g_c1") == {TP("t", 0): "g_c1-0", TP("t", 1): "g_c1-1"}


# ---------------------------------------------------------------- properties

CONSUMERS = ["c1", "c10", "c2", "g_h-1", "m\U0001f600", "m\ue000"]
TOPICS = ["t", "u", "t2", "t10", "Aa", "BB"]

subscriptions_st = st.dictionaries(
    st.sampled_from(CONSUMERS),
    st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 12), max_size=4),
    min_size=1,
)
partitions_st = st.dictionaries(
    st.sampled_from(TOPICS), st.lists(st.integers(0, 40), unique=True, max_size=30), max_size=len(TOPICS)
)
assignor_st = st.sampled_from(sorted(ASSIGNORS))


def _subscribers(subs: dict[str, dict[str, int]], topic: str) -> set[str]:
    return {f"{c}-{i}" for c, counts in subs.items() for i in range(counts.get(topic, 0))}


@given(subscriptions_st, partitions_st, assignor_st)
def test_every_partition_once_and_only_to_subscribers(subs, parts, name) -> None:
    got = ASSIGNORS[name](ctx_of(subs, parts))
    expected_keys = {TP(t, p) for t, ps in parts.items() if _subscribers(subs, t) for p in ps}
    assert set(got) == expected_keys
    for tp, thread in got.items():
        assert thread in _subscribers(subs, tp.topic)


@given(subscriptions_st, partitions_st, assignor_st, st.randoms(use_true_random=False))
def test_same_map_whoever_computes_and_whatever_dict_order(subs, parts, name, rnd) -> None:
    def shuffled(d: dict) -> dict:
        items = list(d.items())
        rnd.shuffle(items)
        return dict(items)

    baseline = ASSIGNORS[name](ctx_of(subs, parts, me=CONSUMERS[0]))
    for me in subs:
        other_subs = shuffled({c: shuffled(counts) for c, counts in subs.items()})
        other_parts = shuffled({t: rnd.sample(ps, len(ps)) for t, ps in parts.items()})
        assert ASSIGNORS[name](ctx_of(other_subs, other_parts, me=me)) == baseline


@given(subscriptions_st, partitions_st, assignor_st)
def test_own_partitions_split_the_global_map(subs, parts, name) -> None:
    got = ASSIGNORS[name](ctx_of(subs, parts))
    owned = [own_partitions(got, c) for c in subs]
    assert sum(len(o) for o in owned) == len(got)
    assert {k: v for o in owned for k, v in o.items()} == got


@given(subscriptions_st, partitions_st)
def test_range_gives_contiguous_floor_or_ceil_runs_in_thread_order(subs, parts) -> None:
    got = range_assign(ctx_of(subs, parts))
    for topic, ps in parts.items():
        threads = sorted(_subscribers(subs, topic), key=lambda s: s.encode("utf-16-be", "surrogatepass"))
        if not threads or not ps:
            continue
        base, extra = divmod(len(ps), len(threads))
        owners = [got[TP(topic, p)] for p in sorted(ps)]
        counts = Counter(owners)
        assert [counts[th] for th in threads] == [base + 1] * extra + [base] * (len(threads) - extra)
        # contiguous runs, in thread order
        assert owners == [th for th in threads for _ in range(counts[th])]


@given(
    st.lists(st.sampled_from(CONSUMERS), min_size=1, unique=True),
    st.lists(st.sampled_from(TOPICS), min_size=1, unique=True),
    st.integers(1, 5),
    partitions_st,
)
def test_roundrobin_identical_subscriptions_balance_overall(consumers, topics, streams, parts) -> None:
    subs = {c: dict.fromkeys(topics, streams) for c in consumers}
    got = roundrobin_assign(ctx_of(subs, parts))
    threads = [f"{c}-{i}" for c in consumers for i in range(streams)]
    counts = Counter(got.values())
    assert {consumer_of_thread(th) for th in counts} <= set(consumers)
    lo = len(got) // len(threads)
    assert all(lo <= counts[th] <= lo + 1 for th in threads)
