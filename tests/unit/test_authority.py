"""The authority rule of CONTRACT §5, exhaustively over its inputs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from migrator.coordination.authority import KafkaHealth, decide_authority, needs_group_check
from migrator.zk.codecs import Authority, ModeNode

HEALTHY = KafkaHealth(joined=True)
KAFKA = ModeNode.decode(b"kafka")


def test_kafka_only_when_every_condition_holds() -> None:
    d = decide_authority(KAFKA, {"a", "b"}, {"a", "b"}, HEALTHY)
    assert d.authority is Authority.KAFKA


def test_absent_mode_means_zookeeper() -> None:
    d = decide_authority(ModeNode.absent(), {"a"}, {"a"}, HEALTHY)
    assert (d.authority, d.reason) == (Authority.ZOOKEEPER, "no mode node")


def test_zookeeper_mode() -> None:
    assert decide_authority(ModeNode.decode(b"zookeeper"), {"a"}, {"a"}, HEALTHY).authority is Authority.ZOOKEEPER


def test_unknown_value_is_reported() -> None:
    for raw in (b"kafak", b"KAFKA", b"kafka\n", b"", b"\xff\xfe"):
        d = decide_authority(ModeNode.decode(raw), {"a"}, {"a"}, HEALTHY)
        assert d.authority is Authority.ZOOKEEPER
        assert d.unknown_mode_value is not None


def test_a_legacy_member_forces_zookeeper() -> None:
    d = decide_authority(KAFKA, {"a", "legacy"}, {"a"}, HEALTHY)
    assert d.authority is Authority.ZOOKEEPER and "legacy" in d.reason


def test_kafka_unavailable_forces_zookeeper() -> None:
    d = decide_authority(KAFKA, {"a"}, {"a"}, KafkaHealth(joined=False, reason="GROUP_MAX_SIZE_REACHED (81)"))
    assert d.authority is Authority.ZOOKEEPER and "GROUP_MAX_SIZE_REACHED" in d.reason


def test_a_bridge_missing_from_the_kafka_group_forces_zookeeper() -> None:
    d = decide_authority(KAFKA, {"a", "b"}, {"a", "b"}, KafkaHealth(joined=True, missing_bridges=frozenset({"b"})))
    assert d.authority is Authority.ZOOKEEPER and "b" in d.reason


def test_bridges_that_are_not_registered_members_do_not_matter() -> None:
    # a migration/ids node without its ids node (a bridge half-way through leaving) is not a legacy member
    assert decide_authority(KAFKA, {"a"}, {"a", "gone"}, HEALTHY).authority is Authority.KAFKA


@given(
    raw=st.one_of(st.none(), st.binary(max_size=12), st.sampled_from([b"kafka", b"zookeeper"])),
    members=st.frozensets(st.sampled_from("abcd")),
    bridges=st.frozensets(st.sampled_from("abcd")),
    joined=st.booleans(),
    missing=st.frozensets(st.sampled_from("abcd")),
)
def test_kafka_implies_every_condition(raw, members, bridges, joined, missing) -> None:
    mode = ModeNode.absent() if raw is None else ModeNode.decode(raw)
    d = decide_authority(mode, members, bridges, KafkaHealth(joined=joined, missing_bridges=missing))
    if d.authority is Authority.KAFKA:
        assert raw == b"kafka" and members <= bridges and joined and not missing
        assert needs_group_check(mode, members, bridges)
    else:
        assert d.reason
