"""A kazoo client bound to a test cluster, and expiring a session on purpose."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol

from kazoo.client import KazooClient


class HasZookeeper(Protocol):
    zookeeper: str


@contextlib.contextmanager
def zk_client(
    cluster: HasZookeeper | str, timeout: float = 10.0, client_id: tuple[int, bytes] | None = None
) -> Iterator[KazooClient]:
    """A started KazooClient that is stopped and closed on exit, whatever the test did.

    `cluster` is a cluster or a connect string (e.g. one with a chroot); `client_id` attaches to an existing
    session (its id and password) instead of opening a new one."""
    hosts = cluster if isinstance(cluster, str) else cluster.zookeeper
    client = KazooClient(hosts=hosts, timeout=timeout, client_id=client_id)
    client.start(timeout=timeout)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def expire_session(zookeeper: str, client: KazooClient) -> None:
    """Expire `client`'s session now: a twin attaches with the same id and password and closes it, so the
    server drops the session and its ephemerals at once while the owner only notices on its next packet."""
    with zk_client(zookeeper, client_id=client.client_id):
        pass
