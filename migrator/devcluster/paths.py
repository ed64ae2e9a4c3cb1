"""Per-user locations of the dev cluster: the jar cache and the state of running clusters.

Everything lives under one cache root so that `rm -rf ~/.cache/migrator` is a full reset.
`MIGRATOR_CACHE_DIR` overrides the root (CI caches, tests that must not touch the real home).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

KAFKA_VERSION = "3.9.1"
OLD_CONSUMER_VERSION = "1.1.1"
"""Kafka 1.1.1 is the last release with the Scala old consumer (ZookeeperConsumerConnector)."""
DEFAULT_NAME = "default"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def cache_root() -> Path:
    override = os.environ.get("MIGRATOR_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "migrator"


def clusters_dir() -> Path:
    return cache_root() / "clusters"


def cluster_state_dir(name: str) -> Path:
    return clusters_dir() / name


def valid_name(name: str) -> bool:
    """Names become directory names and appear in process command lines, so keep them plain."""
    return bool(_NAME_RE.match(name))
