"""The operator's install: the built wheel, `pip install -c constraints.txt` into a clean virtualenv (no
project checkout on its path), then `migrator --version` and a real command against the cluster."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from migrator.zk.paths import GroupPaths
from tests.helpers.cli import ROOT

pytestmark = pytest.mark.slow


def build_wheel(tmp: Path) -> Path:
    """The wheel of a copy of the sources (building in place would leave build/ in the checkout)."""
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "migrator", src / "migrator", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"), f"{src}/"],
                   check=True, timeout=600)  # fmt: skip
    [wheel] = (tmp / "dist").glob("migrator-*.whl")
    return wheel


def test_the_built_wheel_installs_into_a_clean_virtualenv_and_runs(cluster, zk_client, unique_group, tmp_path):
    wheel = build_wheel(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
         "-c", str(ROOT / "constraints.txt"), str(wheel)],
        check=True, timeout=600,
    )  # fmt: skip
    migrator = str(venv / "bin" / "migrator")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([migrator, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)

    version = run("--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"migrator {metadata.version('migrator')}"

    zk_client.create(GroupPaths(unique_group).ids, makepath=True)
    groups = run("groups", "--json", "-z", cluster.zookeeper)
    assert groups.returncode == 0, groups.stderr
    assert unique_group in {row["group"] for row in json.loads(groups.stdout)}
