"""Spark plumbing that needs no Spark: partition sizing, the row schema, and the package zip for executors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from migrator.fleet.model import ROW_FIELDS, FleetRow
from migrator.fleet.pipeline import package_zip, partitions_for

REPO = str(Path(__file__).resolve().parents[2])


def test_partitions_per_core_and_bounded_size():
    assert partitions_for(0, 2) == 1
    assert partitions_for(1, 8) == 1
    assert partitions_for(500, 2) == 2
    assert partitions_for(10_000, 2) == 10
    assert partitions_for(10_000, 64) == 64


def test_row_round_trip():
    row = FleetRow("zk", "g", "READY", ["a: b"], lag=3)
    assert FleetRow.from_dict({**row.to_dict(), "extra": 1}) == row
    assert ROW_FIELDS[:4] == ("ensemble", "group", "status", "reasons")


def test_executors_can_import_the_shipped_zip(tmp_path: Path):
    """What a cluster executor does: import the scan from the zip, not from an installed package."""
    archive = package_zip(tmp_path / "migrator.zip")
    code = (
        "import sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in type(f).__module__.lower()\n"
        "                    and 'editable' not in repr(f).lower()]\n"
        "sys.path_hooks[:] = [h for h in sys.path_hooks if 'editable' not in repr(h).lower()]\n"
        "sys.path_importer_cache.clear()\n"
        # drop the checkout itself (not a venv inside it, whose site-packages hold the dependencies)
        f"sys.path[:] = [{str(archive)!r}] + [p for p in sys.path if p and p.rstrip('/') != {REPO!r}]\n"
        "import migrator.fleet.scan as s\n"
        "print(s.__file__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert "migrator.zip" in out.stdout, out.stdout + out.stderr
