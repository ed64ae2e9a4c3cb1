"""What the scan tells the operator: a summary (counts per status, top blocked reasons) and row files."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from migrator.errors import UsageError
from migrator.fleet.classify import reason_code
from migrator.fleet.model import ROW_FIELDS, STATUS_ORDER, FleetRow, Status
from migrator.table import align

FORMATS = ("table", "json", "csv", "parquet")
TABLE_COLUMNS = (
    "ensemble",
    "group",
    "status",
    "members",
    "bridges",
    "legacy",
    "dialect",
    "route",
    "mode",
    "kafka_members",
    "lag",
    "reasons",
)


def counts(rows: Sequence[FleetRow]) -> dict[str, int]:
    found = Counter(r.status for r in rows)
    return {s.value: found.get(s.value, 0) for s in STATUS_ORDER}


def top_reasons(rows: Sequence[FleetRow], status: Status = Status.BLOCKED, limit: int = 5) -> list[tuple[str, int]]:
    """Most frequent reason codes among rows of `status` (a group counts once per code)."""
    found: Counter[str] = Counter()
    for r in rows:
        if r.status == status.value:
            found.update({reason_code(x) for x in r.reasons})
    return found.most_common(limit)


def _grid(header: Sequence[str], body: Sequence[Sequence[Any]]) -> str:
    return "\n".join(align([header, *body], rule=True, missing=""))


def summary(rows: Sequence[FleetRow], elapsed_s: float | None = None) -> str:
    total = len(rows)
    by_status = counts(rows)
    body = [(s, n, f"{100 * n / total:.1f}%" if total else "-") for s, n in by_status.items()]
    text = [_grid(("status", "groups", "share"), [*body, ("total", total, "")])]
    blocked = top_reasons(rows)
    if blocked:
        text.append("most frequent BLOCKED reasons:\n" + _grid(("reason", "groups"), blocked))
    if elapsed_s is not None and elapsed_s > 0:
        text.append(f"scanned {total} groups in {elapsed_s:.1f}s ({total / elapsed_s:.0f} groups/s)")
    return "\n\n".join(text)


def table(rows: Sequence[FleetRow]) -> str:
    body = [[("; ".join(r.reasons) if c == "reasons" else getattr(r, c)) for c in TABLE_COLUMNS] for r in rows]
    return _grid(TABLE_COLUMNS, body)


def to_csv(rows: Sequence[FleetRow]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(ROW_FIELDS)
    for r in rows:
        writer.writerow(["; ".join(r.reasons) if f == "reasons" else getattr(r, f) for f in ROW_FIELDS])
    return out.getvalue()


def to_json(rows: Sequence[FleetRow]) -> str:
    return "\n".join(json.dumps(r.to_dict(), sort_keys=True) for r in rows) + ("\n" if rows else "")


def output_path(directory: Path, fmt: str) -> Path:
    suffix = {"table": "txt", "json": "jsonl"}.get(fmt, fmt)
    return directory / f"fleet-scan.{suffix}"


def write_rows(
    rows: Sequence[FleetRow], directory: Path, fmt: str, write_parquet: Callable[[str], None] | None = None
) -> Path:
    """Write the rows under `directory`; Parquet is written by Spark (`write_parquet(path)`)."""
    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    directory.mkdir(parents=True, exist_ok=True)
    path = output_path(directory, fmt)
    if fmt == "parquet":
        if write_parquet is None:
            raise UsageError("--format parquet needs the Spark job")
        write_parquet(str(path))
        return path
    text = {"table": table, "json": to_json, "csv": to_csv}[fmt](rows)
    path.write_text(text if fmt != "table" else text + "\n\n" + summary(rows) + "\n")
    return path
