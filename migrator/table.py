"""Aligned plain-text tables, the one way every command prints one (`status`, `fleet-scan`, `offsets diff`,
`acl show`).

One small helper rather than tabulate or rich: the output is read by operators and by `grep`/`awk`, so it is
plain columns separated by two spaces, without borders, colour or terminal-width wrapping; a library would
add a dependency for ten lines and its own formatting rules to keep byte-stable across upgrades.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

GAP = "  "


def align(
    rows: Sequence[Sequence[object]], *, right: Collection[int] = (), rule: bool = False, missing: str = "-"
) -> list[str]:
    """`rows` (a header first, if any) as lines of columns as wide as their widest cell, `GAP` between them.

    Columns whose index is in `right` are right-aligned (numbers); `None` cells print as `missing`; `rule`
    puts a line of dashes under the first row. Trailing spaces are dropped, so a line ends at its last text.
    """
    cells = [[missing if v is None else str(v) for v in row] for row in rows]
    if not cells:
        return []
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    lines = [
        GAP.join(
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in cells
    ]
    if rule:
        lines.insert(1, GAP.join("-" * w for w in widths))
    return lines
