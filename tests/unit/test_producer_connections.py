"""How many connections the demo's sequenced producer spreads its requests over."""

from hypothesis import given
from hypothesis import strategies as st

from migrator.demo.workload import REQUESTS_PER_CONNECTION, connections_for


def test_a_slow_producer_keeps_one_connection() -> None:
    assert connections_for(40.0, 8) == 1
    assert connections_for(REQUESTS_PER_CONNECTION, 1024) == 1


def test_thousands_of_records_a_second_over_hundreds_of_partitions_use_several_connections() -> None:
    assert connections_for(3_200.0, 1_024) == 8
    assert connections_for(3_200.0, 512) == 8


def test_never_more_connections_than_partitions() -> None:
    assert connections_for(100_000.0, 4) == 4


@given(st.floats(min_value=0.1, max_value=1e6), st.integers(min_value=1, max_value=10_000))
def test_each_connection_stays_under_its_share(rate: float, partitions: int) -> None:
    n = connections_for(rate, partitions)
    assert 1 <= n <= partitions
    assert rate / n <= REQUESTS_PER_CONNECTION or n == partitions
