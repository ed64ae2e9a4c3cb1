"""`migrator.logs.RepeatFilter`: one line per distinct condition per window, with the count of the rest."""

from __future__ import annotations

import logging

from hypothesis import given
from hypothesis import strategies as st

from migrator.logs import RepeatFilter, condition


def _record(msg: str, *args: object, level: int = logging.ERROR) -> logging.LogRecord:
    return logging.LogRecord("migrator.librdkafka", level, __file__, 1, msg, args or None, None)


REFUSED = "127.0.0.1:{p}/bootstrap: Connect failed (after {n}ms in state CONNECT)"


def _refused(n: int) -> logging.LogRecord:
    # confluent-kafka's call: logger.log(level, "%s [%s] %s", facility, client name, line)
    return _record("%s [%s] %s", "FAIL", f"rdkafka#consumer-{n}", REFUSED.format(n=n, p=9092 + n))


def test_repeats_within_the_window_are_counted_then_reported_once() -> None:
    f = RepeatFilter(window_s=30.0)
    assert f.filter(_refused(0))
    assert not any(f.filter(_refused(n)) for n in range(1, 50))
    f.window_s = 0.0  # the window has passed
    later = _refused(50)
    assert f.filter(later)
    assert later.getMessage().endswith("(and 49 more like it in the last 0s)")


def test_distinct_conditions_and_levels_pass_separately() -> None:
    f = RepeatFilter(window_s=30.0)
    assert f.filter(_record("broker %s down", 1))
    assert f.filter(_record("group %s rebalancing", "g"))
    assert f.filter(_record("broker %s down", 1, level=logging.WARNING))
    assert not f.filter(_record("broker %s down", 2))


def test_librdkafkas_own_suppression_count_is_the_same_condition() -> None:
    plain = "1.2.3.4:9/bootstrap: Connect failed (after 0ms in state CONNECT)"
    counted = "1.2.3.4:9/bootstrap: Connect failed (after 3ms in state CONNECT, 7 identical error(s) suppressed)"
    assert condition(plain) == condition(counted)


@given(st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=200))
def test_one_line_per_condition_however_many_repeats(numbers: list[int]) -> None:
    f = RepeatFilter(window_s=3600.0)
    assert sum(f.filter(_record("connect to broker %d failed after %dms", n, n)) for n in numbers) == 1
