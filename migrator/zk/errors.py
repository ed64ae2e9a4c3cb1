"""ZooKeeper's errors, as callers outside `migrator.zk` catch them: kazoo's classes under the adapter's names,
so that only the adapter imports kazoo."""

from __future__ import annotations

from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
)
from kazoo.exceptions import KazooException as ZooKeeperError

__all__ = [
    "BadVersionError",
    "ConnectionLoss",
    "NoAuthError",
    "NoNodeError",
    "NodeExistsError",
    "NotEmptyError",
    "SessionExpiredError",
    "ZooKeeperError",
]
