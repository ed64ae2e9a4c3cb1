"""The one table helper: columns as wide as their widest cell, two spaces apart, no trailing spaces."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from migrator.table import align


def test_left_aligned_with_missing_cells_and_no_trailing_spaces() -> None:
    assert align([("member", "threads", "note"), ("a", 2, None), ("bridge-b", 10, "x")]) == [
        "member    threads  note",
        "a         2        -",
        "bridge-b  10       x",
    ]


def test_right_aligned_columns_and_a_rule_under_the_header() -> None:
    rows = [("partition", "zookeeper", "state"), ("t-0", 5, "equal"), ("topic-12", None, "zookeeper only")]
    assert align(rows, right=(1,), rule=True, missing="") == [
        "partition  zookeeper  state",
        "---------  ---------  --------------",
        "t-0                5  equal",
        "topic-12              zookeeper only",
    ]


def test_no_rows() -> None:
    assert align([]) == []


cell = st.one_of(
    st.none(), st.integers(-(10**6), 10**6), st.text(st.characters(codec="ascii", exclude_categories=("Cc",)))
)


@given(st.integers(1, 4).flatmap(lambda n: st.lists(st.lists(cell, min_size=n, max_size=n), min_size=1, max_size=6)))
def test_every_column_starts_at_the_same_place(rows: list[list[object]]) -> None:
    lines = align(rows, missing="-")
    widths = [max(len("-" if r[i] is None else str(r[i])) for r in rows) for i in range(len(rows[0]))]
    starts = [sum(widths[:i]) + 2 * i for i in range(len(widths))]
    for row, line in zip(rows, lines, strict=True):
        assert line == line.rstrip()
        for i, value in enumerate(row):
            text = "-" if value is None else str(value)
            assert line.ljust(starts[i] + widths[i])[starts[i] : starts[i] + len(text)] == text
