"""Rebalance cost of the legacy connector, printed (never asserted on time): see benchmarks/legacy_rebalance.py."""

from __future__ import annotations

import json

import pytest

from benchmarks.legacy_rebalance import measure
from tests.helpers.kafka import make_topic

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_six_member_group_settles_after_a_join_and_a_leave(cluster: object) -> None:
    result = measure(cluster.zookeeper, cluster.mntr,  # type: ignore[attr-defined]
                     lambda t, n: make_topic(cluster, t, n) and None, members=6, partitions=12, rounds=2)  # type: ignore[arg-type]  # fmt: skip
    print("\nlegacy rebalance cost:", json.dumps({k: v for k, v in result.items() if k != "settings"}))
    assert len(result["join"]) == 2 and all(j["zk_packets"] > 0 for j in result["join"])
