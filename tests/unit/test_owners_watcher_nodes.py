"""Which owner nodes the owners watcher reads: Scala's `<topic>/<partition>` (a thread id) and pykafka's
`<folder>/<leader>-<partition>` (a consumer id, so a `member_only` interval), nothing else."""

from __future__ import annotations

from migrator.observe.owners import OwnerInterval, _owner_node


def test_scala_and_pykafka_owner_nodes_are_read_and_nothing_else() -> None:
    assert _owner_node("orders", "3") == ("orders", 3)
    assert _owner_node("b'orders'", "1-10") == ("orders", 10)  # pykafka on Python 3
    assert _owner_node("orders", "1-10") == ("orders", 10)  # pykafka on Python 2
    assert _owner_node("orders", "x") is None
    assert _owner_node("b'or ders'", "1-2") is None


def test_a_pykafka_owner_interval_is_held_by_the_members_thread() -> None:
    interval = OwnerInterval("orders", 10, "g_pykafka-1", 0, None, member_only=True)
    assert interval.held_by("g_pykafka-1-0") and not interval.held_by("g_pykafka-2-0")
