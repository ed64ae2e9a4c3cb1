"""Which Kafka cluster a KRaft fleet's groups use: the first publication in group and bridge order."""

from __future__ import annotations

from migrator.fleet.discover import first_bootstrap
from migrator.protocol.codecs import Authority, PublishedAuthority


def _published(bootstrap: str) -> PublishedAuthority:
    return PublishedAuthority(Authority.KAFKA, 1, 0, bootstrap=bootstrap)


def test_the_first_group_in_order_with_a_published_bootstrap_names_the_cluster() -> None:
    groups = ["a", "b", "c"]
    bridges = {"a": (), "b": ("b-2", "b-1"), "c": ("c-1",)}
    published = {("b", "b-1"): _published("k1:9092"), ("b", "b-2"): _published("k2:9092"),
                 ("c", "c-1"): _published("k3:9092")}  # fmt: skip

    assert first_bootstrap(groups, bridges, published) == "k1:9092"  # b before c; b-1 before b-2


def test_publications_without_a_bootstrap_or_unreadable_are_skipped() -> None:
    bridges = {"a": ("a-1", "a-2"), "b": ("b-1",)}
    published = {("a", "a-1"): None, ("a", "a-2"): _published(""), ("b", "b-1"): _published("k:9092")}

    assert first_bootstrap(["a", "b"], bridges, published) == "k:9092"


def test_a_fleet_without_bridges_names_no_cluster() -> None:
    assert first_bootstrap(["a", "b"], {"a": (), "b": ()}, {}) == ""
    assert first_bootstrap([], {}, {}) == ""
