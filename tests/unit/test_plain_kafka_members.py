"""Each caller asks the read model's named question about the Kafka group's members, at the edges where the
membership sets differ: the set-mode preflight, `status` and the fleet scan ask for plain Kafka consumers
(`Group.plain_consumers`: no announced bridge); the fallback guard for the members ZooKeeper's assignment does
not account for (`Group.outside_zookeeper`: no registered bridge).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from migrator.coordination.authority import KafkaGroupView, KafkaHealth, decide_authority, guard_fallback
from migrator.coordination.preflight import preflight
from migrator.fleet.classify import plain_kafka_consumers
from migrator.fleet.model import KafkaGroupFacts
from migrator.protocol.codecs import Mode, ModeNode, Registration
from migrator.protocol.group_view import GroupView, Member
from migrator.protocol.kafka import KafkaGroup, KafkaGroupState, KafkaMember

REG = Registration({"t": 1}, timestamp_ms=1)
KAFKA = ModeNode.decode(b"kafka")


def group(*client_ids: str) -> KafkaGroup:
    members = tuple(KafkaMember(f"{c}-{i}", c, "/127.0.0.1", None, ()) for i, c in enumerate(client_ids))
    return KafkaGroup("g", KafkaGroupState.STABLE, "range", members)


def zk_view(
    bridges: tuple[str, ...] = (), legacy: tuple[str, ...] = (), only_migration: tuple[str, ...] = ()
) -> GroupView:
    members = tuple(Member(c, REG, 0, True) for c in bridges) + tuple(Member(c, REG, 0, False) for c in legacy)
    return GroupView("g", members=members, migration_ids=frozenset(bridges + only_migration), mode=KAFKA)


def preflight_plain(view: GroupView, kafka: KafkaGroup) -> bool:
    """Whether set-mode zookeeper is refused for plain Kafka consumers."""
    return any("plain Kafka consumer" in r for r in preflight(Mode.ZOOKEEPER, view, kafka).refusals)


def guard_plain(view: GroupView, kafka: KafkaGroup) -> bool:
    """Whether the fallback guard holds for plain Kafka consumers, with the worker's set of registered bridges."""
    rule = decide_authority(KAFKA, {"legacy"}, set(), KafkaHealth(joined=True))  # falls back to zookeeper
    return guard_fallback(rule, KAFKA, view.member_ids & view.migration_ids, KafkaGroupView(kafka)).held


def test_the_guard_names_one_client_id_per_member_sorted() -> None:
    assert KafkaGroupView(group("z", "b1", "a", "z")).outside_zookeeper({"b1"}) == ("a", "z", "z")
    assert KafkaGroupView(None).outside_zookeeper({"b1"}) == ()


def test_a_bridge_only_in_migration_ids_is_no_plain_consumer_but_the_guard_holds_for_it() -> None:
    """Registration writes `migration/ids` before `ids`; deregistration deletes `ids` first. Such a bridge keeps
    no Kafka partition once the mode says zookeeper, but ZooKeeper's assignment does not count it either."""
    view, kafka = zk_view(bridges=("b1",), only_migration=("b2",)), group("b1", "b2")
    assert not preflight_plain(view, kafka)
    assert plain_kafka_consumers(view, KafkaGroupFacts(kafka)) == ()
    assert guard_plain(view, kafka)


def test_a_legacy_consumer_id_in_the_kafka_group_is_a_plain_consumer_to_every_caller() -> None:
    """A legacy connector never joins the Kafka group, so a member with its id is a plain consumer."""
    view, kafka = zk_view(bridges=("b1",), legacy=("x",)), group("b1", "x")
    assert preflight_plain(view, kafka)
    assert plain_kafka_consumers(view, KafkaGroupFacts(kafka)) == ("x",)
    assert guard_plain(view, kafka)


ids = st.lists(st.sampled_from(["a", "b", "c", "rdkafka"]), max_size=5).map(tuple)


@given(bridges=ids, legacy=ids, extra=ids, clients=ids)
def test_every_caller_agrees_with_the_one_rule_over_its_own_ids(bridges, legacy, extra, clients) -> None:
    legacy = tuple(sorted(set(legacy) - set(bridges)))
    view, kafka = zk_view(tuple(sorted(set(bridges))), legacy, tuple(sorted(set(extra)))), group(*clients)
    assert preflight_plain(view, kafka) == bool(set(clients) - view.migration_ids)
    expected = tuple(sorted(c for c in clients if c not in view.migration_ids))
    assert plain_kafka_consumers(view, KafkaGroupFacts(kafka)) == expected
    registered = view.member_ids & view.migration_ids
    assert guard_plain(view, kafka) == bool(set(clients) - registered)
