"""The soak's fault menu: the silent faults are drawn like the others, from the seed only."""

from __future__ import annotations

import random

from benchmarks.soak import FaultKind, SoakConfig, draw_fault


def test_a_silent_broker_targets_a_broker_for_a_broker_outage_length() -> None:
    config = SoakConfig(minutes=1, weights=((FaultKind.BROKER_SILENT, 1),))
    faults = [draw_fault(random.Random(seed), config, "zookeeper") for seed in range(20)]
    assert {f.kind for f in faults} == {FaultKind.BROKER_SILENT}
    assert {f.target for f in faults} <= {f"broker-{i}" for i in range(1, config.brokers + 1)}
    assert all(config.broker_down_s[0] <= f.seconds <= config.broker_down_s[1] for f in faults)


def test_a_zookeeper_partition_targets_a_member_past_its_session_timeout() -> None:
    config = SoakConfig(minutes=1, weights=((FaultKind.ZOOKEEPER_PARTITION, 1),))
    faults = [draw_fault(random.Random(seed), config, "kafka") for seed in range(20)]
    assert {f.target for f in faults} <= {f"m{i}" for i in range(config.members)}
    assert all(4.0 < config.partition_s[0] <= f.seconds <= config.partition_s[1] for f in faults)


def test_the_default_menu_has_every_kind() -> None:
    assert {kind for kind, weight in SoakConfig(minutes=1).weights if weight > 0} == set(FaultKind)
