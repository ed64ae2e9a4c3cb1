"""Where a group's committed offsets live."""

from __future__ import annotations

from enum import StrEnum


class OffsetStore(StrEnum):
    """An offset store, spelled as the CLI's `--store`, `--from` and `--to` and the JSON reports spell it."""

    ZOOKEEPER = "zookeeper"
    KAFKA = "kafka"
