"""The pykafka dialect's layout and assignors, against the real pykafka 2.8.0 assignors.

`PykafkaOracle` calls pykafka's own `decide_partitions` in the pykafka peer venv (pykafka cannot be
imported here: it pins kazoo 2.5.0), so every generated case is compared with the library itself.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrator.assign.pykafka import ASSIGNORS, PykafkaProtocol, partition_order, range_assign, roundrobin_assign
from migrator.config import ConsumerConfig
from migrator.connector import effective_config
from migrator.errors import ConfigError
from migrator.protocol.codecs import PATTERN_STATIC, Registration
from migrator.protocol.layout_dialect import Dialect, LayoutEvidence, Recognition, Refusal, recognise
from migrator.protocol.pykafka_layout import (
    OwnerNode,
    Spelling,
    decode_registration,
    encode_registration,
    owners_folders,
    spelling_of_folder,
    topic_text,
)
from migrator.zk.pykafka_group import open_pykafka_group
from tests.helpers.pykafka_peer import PykafkaOracle


@pytest.fixture(scope="module")
def oracle() -> Iterator[PykafkaOracle]:
    real = PykafkaOracle()
    yield real
    real.close()


# ---------------------------------------------------------------- layout


def test_owners_folder_is_the_repr_of_bytes_on_python3_and_the_plain_name_on_python2() -> None:
    assert owners_folders("orders") == {Spelling.PYTHON3: "b'orders'", Spelling.PYTHON2: "orders"}
    assert spelling_of_folder("b'orders'") == ("orders", Spelling.PYTHON3)
    assert spelling_of_folder("orders") == ("orders", Spelling.PYTHON2)
    assert spelling_of_folder("b'or ders'") is None


def test_owner_node_name_is_leader_dash_partition_and_scala_names_are_not_one() -> None:
    assert OwnerNode(1, 3).name == "1-3"
    assert OwnerNode.parse("12-0") == OwnerNode(12, 0)
    assert OwnerNode.parse("3") is None
    assert OwnerNode.parse("a-3") is None


def test_registration_is_the_topic_name_and_scala_json_is_not_one() -> None:
    assert encode_registration("orders") == b"orders"
    assert decode_registration(b"orders") == "orders"
    assert decode_registration(b'{"version":1,"subscription":{"orders":1}}') is None
    assert decode_registration(b"\xff") is None


# ---------------------------------------------------------------- assignors, worked examples


def test_partition_order_is_textual_so_10_precedes_2_and_the_leader_counts() -> None:
    leaders = {p: 1 for p in range(12)}
    assert partition_order("t", Spelling.PYTHON3, leaders)[:4] == [0, 1, 10, 11]
    assert partition_order("t", Spelling.PYTHON3, {0: 2, 1: 1}) == [1, 0]


def test_range_over_sorted_consumers_in_pykafka_order() -> None:
    leaders = {p: 1 for p in range(12)}
    got = range_assign("t", Spelling.PYTHON3, ["h:b", "h:a"], leaders)
    assert {p for p, c in got.items() if c == "h:a"} == {0, 1, 10, 11, 2, 3}  # order: 0 1 10 11 2 3 | 4 5 ...


def test_roundrobin_deals_in_pykafka_order() -> None:
    got = roundrobin_assign("t", Spelling.PYTHON3, ["h:a", "h:b"], {0: 2, 1: 1, 2: 1})
    assert got == {1: "h:a", 2: "h:b", 0: "h:a"}


# ---------------------------------------------------------------- against the real library

topics = st.sampled_from(["t", "orders", "a.b-c_d", "Z9", "topic_10"])
consumer_ids = st.lists(
    st.from_regex(r"[a-z0-9.-]{1,6}:[0-9a-f]{8}", fullmatch=True), min_size=1, max_size=6, unique=True
)
leader_maps = st.dictionaries(st.integers(0, 23), st.integers(0, 12), min_size=1, max_size=24)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    protocol=st.sampled_from(list(PykafkaProtocol)),
    topic=topics,
    spelling=st.sampled_from(list(Spelling)),
    consumers=consumer_ids,
    leaders=leader_maps,
)
def test_assignment_equals_pykafkas_own(
    oracle: PykafkaOracle,
    protocol: PykafkaProtocol,
    topic: str,
    spelling: Spelling,
    consumers: list[str],
    leaders: dict[int, int],
) -> None:
    ours = ASSIGNORS[protocol](topic, spelling, consumers, leaders)
    theirs = oracle.decide(protocol.value, topic, spelling is Spelling.PYTHON2, consumers, leaders)
    assert ours == theirs
    assert topic_text(topic, spelling) in owners_folders(topic).values()


# ---------------------------------------------------------------- which dialect a group is written in

SCALA_REG = Registration({"orders": 1}, PATTERN_STATIC, 1).encode()


@pytest.mark.parametrize(
    ("evidence", "expected"),
    [
        (LayoutEvidence(), Recognition()),
        (LayoutEvidence({"g_a": SCALA_REG}, {"orders": ("0", "1")}), Recognition(Dialect.SCALA)),
        (LayoutEvidence({"h:1": b"orders"}), Recognition(Dialect.PYKAFKA)),
        (
            LayoutEvidence({"h:1": b"orders"}, {"b'orders'": ("1-0", "2-10")}),
            Recognition(Dialect.PYKAFKA, Spelling.PYTHON3),
        ),
        (LayoutEvidence({}, {"orders": ("1-0",)}), Recognition(Dialect.PYKAFKA, Spelling.PYTHON2)),
        (LayoutEvidence({}, {"orders": ()}), Recognition()),
    ],
)
def test_a_group_written_in_one_dialect_is_recognised(evidence: LayoutEvidence, expected: Recognition) -> None:
    assert recognise(evidence) == expected


@pytest.mark.parametrize(
    ("evidence", "refusal", "node"),
    [
        (LayoutEvidence({"g_a": SCALA_REG, "h:1": b"orders"}), Refusal.MIXED, "ids/h:1"),
        (LayoutEvidence({}, {"b'orders'": ("1-0",), "orders": ("1-1",)}), Refusal.MIXED, "owners/orders/1-1"),
        (LayoutEvidence({"g_a": SCALA_REG}, {"orders": ("1-0",)}), Refusal.MIXED, "owners/orders/1-0"),
        (LayoutEvidence({"x": b"{not json"}), Refusal.UNREADABLE, "ids/x"),
        (LayoutEvidence({}, {"b'orders'": ("3",)}), Refusal.UNREADABLE, "owners/b'orders'/3"),
        (LayoutEvidence({}, {"orders": ("lock",)}), Refusal.UNREADABLE, "owners/orders/lock"),
    ],
)
def test_a_group_matching_neither_or_both_dialects_is_refused_naming_the_node(
    evidence: LayoutEvidence, refusal: Refusal, node: str
) -> None:
    got = recognise(evidence)
    assert got.dialect is None and got.refusal is refusal
    assert node in got.detail


# ---------------------------------------------------------------- what a pykafka-dialect member refuses


@pytest.mark.parametrize(
    "registration",
    [
        Registration({"a": 1, "b": 1}, PATTERN_STATIC, 0),
        Registration({"a": 2}, PATTERN_STATIC, 0),
        Registration({"a.*": 1}, "white_list", 0),
    ],
)
def test_a_pykafka_member_consumes_one_topic_with_one_stream(registration: Registration) -> None:
    with pytest.raises(ConfigError, match="exactly one topic with one stream"):
        open_pykafka_group(None, "g", registration, "range")  # type: ignore[arg-type]  # refused before any read


@pytest.mark.parametrize("bridge", [False, True])
def test_the_pykafka_dialect_commits_to_kafka_only_as_a_member_and_as_a_bridge(bridge: bool) -> None:
    props = {"zookeeper.connect": "127.0.0.1:1", "group.id": "g", "zookeeper.layout": "pykafka",
             "coordination.migration.enabled": str(bridge).lower(), "kafka.bootstrap.servers": "127.0.0.1:1",
             "dual.commit.enabled": "true"}  # fmt: skip
    cfg = effective_config(ConsumerConfig.from_mapping(props))
    assert (cfg.offsets_storage, cfg.dual_commit_enabled, cfg.migration_enabled) == ("kafka", False, bridge)
