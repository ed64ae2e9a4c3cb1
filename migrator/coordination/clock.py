"""The clock the coordination state machines read their deadlines from.

Injected (default `time.monotonic`) so that unit tests drive the worker's retries, re-checks and commit
interval, and the Kafka group tracker's rebalance and describe windows, without sleeping.
"""

from __future__ import annotations

from collections.abc import Callable

Clock = Callable[[], float]
"""Monotonic seconds."""
