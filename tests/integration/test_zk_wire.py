"""The fleet scan's one-socket reader (`migrator.zk.wire`) against the real ZooKeeper, with the pinned kazoo
whose private request classes it speaks through; any other kazoo is refused before a byte is sent."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kazoo import version as kazoo_version
from kazoo.client import KazooClient

from migrator.fleet import synthetic
from migrator.zk import wire
from migrator.zk.group_reader import read_groups_with_layout
from tests.helpers.zk import zk_client as open_zk

ROOT = Path(__file__).resolve().parents[2]


def _pinned_kazoo() -> str:
    pins = [line for line in (ROOT / "constraints.txt").read_text().splitlines() if line.startswith("kazoo==")]
    return pins[0].removeprefix("kazoo==")


def test_the_reader_is_checked_against_the_pinned_kazoo() -> None:
    assert wire.WIRE_KAZOO == _pinned_kazoo() == kazoo_version.__version__


def test_with_the_pinned_kazoo_it_reads_what_kazoo_reads(cluster: Any, zk_client: KazooClient) -> None:
    prefix = f"wire{int(time.time() * 1000)}"
    with open_zk(cluster.zookeeper, timeout=30) as writer:
        try:
            fleet = synthetic.make_fleet(writer, 60, prefix=prefix, seed=3, now_ms=int(time.time() * 1000))
            groups = sorted(fleet.shapes)
            with wire.WireSession(cluster.zookeeper, None, 10.0) as session:
                over_the_wire = read_groups_with_layout(session, groups)
            assert over_the_wire == read_groups_with_layout(zk_client, groups)
            assert {view.group for view, _ in over_the_wire} == set(groups)
        finally:
            synthetic.remove_fleet(writer, prefix)


def test_another_kazoo_is_refused_with_one_clear_error(cluster: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kazoo_version, "__version__", "2.99.0")
    with pytest.raises(wire.WireKazooMismatch) as refused:
        wire.WireSession(cluster.zookeeper, None, 10.0)
    assert str(refused.value) == (
        f"kazoo 2.99.0 is installed, but the fleet scan's ZooKeeper reader was checked against kazoo "
        f"{wire.WIRE_KAZOO} only: install kazoo=={wire.WIRE_KAZOO} (constraints.txt)"
    )
