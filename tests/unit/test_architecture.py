"""The layering of docs/architecture.md holds: import-linter's contracts (pyproject.toml) are kept, and the pure
core imports without the shell's libraries, in a fresh interpreter as an application would import it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import migrator

ROOT = Path(__file__).resolve().parents[2]
IO_LIBRARIES = ("kazoo", "confluent_kafka", "prometheus_client", "click", "pyspark", "matplotlib")
PURE_CORE = (
    "migrator.assign.model",
    "migrator.assign.legacy",
    "migrator.assign.subdivide",
    "migrator.coordination.authority",
    "migrator.coordination.gating",
    "migrator.coordination.plan",
    "migrator.coordination.preflight",
    "migrator.fleet.classify",
    *(f"migrator.protocol.{p.stem}" for p in sorted((ROOT / "migrator/protocol").glob("[!_]*.py"))),
)


def test_import_linter_contracts_are_kept() -> None:
    """Layers, no cycle between siblings at any depth, a pure core, a protocol package that imports nothing."""
    lint_imports = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def _loaded_after(module: str) -> list[str]:
    """The top-level packages loaded by importing `module` alone in a new interpreter."""
    code = f"import json, sys; import {module}; print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("module", PURE_CORE)
def test_every_pure_module_loads_no_io_library(module: str) -> None:
    """`python -c "import migrator.assign.model"` once loaded 38 modules, kazoo and confluent_kafka among them."""
    loaded = _loaded_after(module)
    assert not [lib for lib in IO_LIBRARIES if lib in loaded], loaded


def test_the_public_names_load_lazily_and_all_resolve() -> None:
    assert sorted(migrator.__all__) == sorted(migrator._HOMES)
    for name in migrator.__all__:
        assert getattr(migrator, name).__name__ == name
    assert set(migrator.__all__) <= set(dir(migrator))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = migrator.Nope


def test_star_import_gives_every_public_name() -> None:
    code = "from migrator import *; print(sorted(k for k in dir() if not k.startswith('_')))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(sorted(migrator.__all__))


KAZOO_HOMES = ("zk", "devcluster", "observe")
"""The only parts of migrator that may import kazoo: the adapter, the dev cluster and the independent observer."""


def _imports_kazoo(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names = [node.module]
        if any(name == "kazoo" or name.startswith("kazoo.") for name in names):
            return True
    return False


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _kazoo_contract() -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return next(c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "kazoo-boundary")


def test_only_the_zookeeper_adapter_imports_kazoo() -> None:
    """Outside zk/, devcluster/ and observe/ only the contract's named exceptions still import kazoo."""
    excepted = {rule.split(" -> ")[0] for rule in _kazoo_contract().get("ignore_imports", [])}
    outside = sorted(
        _module_name(path)
        for path in (ROOT / "migrator").rglob("*.py")
        if path.relative_to(ROOT / "migrator").parts[0] not in KAZOO_HOMES and _imports_kazoo(path)
    )
    assert [m for m in outside if m not in excepted] == []


def test_the_kazoo_contract_covers_every_part_of_migrator_but_the_adapter() -> None:
    """A new subpackage is forbidden kazoo too: the contract's sources are everything but the three homes."""
    parts = {
        f"migrator.{path.stem if path.is_file() else path.name}"
        for path in (ROOT / "migrator").iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()
    }
    assert set(_kazoo_contract()["source_modules"]) == parts - {f"migrator.{home}" for home in KAZOO_HOMES}
