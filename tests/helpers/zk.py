"""A kazoo client bound to a test cluster."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol

from kazoo.client import KazooClient


class HasZookeeper(Protocol):
    zookeeper: str


@contextlib.contextmanager
def zk_client(cluster: HasZookeeper, timeout: float = 10.0) -> Iterator[KazooClient]:
    """A started KazooClient that is stopped and closed on exit, whatever the test did."""
    client = KazooClient(hosts=cluster.zookeeper, timeout=timeout)
    client.start(timeout=timeout)
    try:
        yield client
    finally:
        client.stop()
        client.close()
