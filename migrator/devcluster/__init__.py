"""A local ZooKeeper + Kafka (ZooKeeper mode) cluster on loopback: `DevCluster.start()`; see docs/devcluster.md."""

from __future__ import annotations

from migrator.devcluster.cluster import DevCluster
from migrator.devcluster.jars import ensure_jars

__all__ = ["DevCluster", "ensure_jars"]
