"""Drill 16: the only broker goes silent for 30 s, four times, under each authority.

Drill 4 stops the broker: its sockets close and every client knows at once. A broker behind a partition,
or frozen (a long GC pause, a stalled disk), closes nothing: requests in flight stay unanswered until the
clients' own timeouts, which is where librdkafka's retry and reconnect logic is least exercised. The
cluster's broker advertises a `SilentProxy` (`broker_proxies=True`), so every client, the bridges, the
producer and the broker's own controller connection included, reaches it only through the proxy, which
stops forwarding for `SILENT_S` without closing a socket, `ROUNDS` times.

One cluster serves two groups at once, one obeying Kafka and one ZooKeeper, three bridges each in their
own processes. No member process may die; after each round both groups are back under their authority and
every partition processes a record produced after the silence within `RESUME_BOUND_S`. ZooKeeper stays
reachable, so no session expires and nothing may be processed twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.chaos.conftest import Drill

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

SILENT_S = 30.0
ROUNDS = 4
# silence over -> every partition of both groups processed a record produced after it. Longer than drill 4's 60 s:
# nothing tells the clients the silence ended, so requests sent during it must first reach their own timeouts.
RESUME_BOUND_S = 90.0
RATE = 150.0  # per group


def silent_round(drills: dict[str, Drill], names: list[str]) -> float:
    """One silence of the broker while every member stays alive; seconds from its end to both groups resumed."""
    proxy = drills["kafka"].cluster.proxy("broker-1")
    proxy.silence()
    until = time.monotonic() + SILENT_S
    try:
        while time.monotonic() < until:
            for d in drills.values():
                d.assert_alive()
            time.sleep(0.5)
    finally:
        proxy.resume()
    healed = time.monotonic()
    for authority, d in drills.items():
        d.converge(authority, names, timeout=RESUME_BOUND_S)
    for d in drills.values():
        d.resumes(timeout=max(1.0, RESUME_BOUND_S - (time.monotonic() - healed)))
    return time.monotonic() - healed


def test_only_broker_silent_30s_four_times(both_modes: Callable[..., dict[str, Drill]]) -> None:
    names = ["b0", "b1", "b2"]
    drills = both_modes(names, RATE, broker_proxies=True)
    recovered = [silent_round(drills, names) for _ in range(ROUNDS)]
    verdicts = {authority: d.finish().counts() for authority, d in drills.items()}
    print(f"only broker silent {ROUNDS} x {SILENT_S:.0f}s: recovered {[f'{s:.1f}s' for s in recovered]}"
          f" after each; {verdicts}")  # fmt: skip
