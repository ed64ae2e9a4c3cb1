"""A kazoo client bound to a test cluster, and expiring a session on purpose."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Protocol

from kazoo.client import KazooClient
from kazoo.protocol.serialization import Close, Connect, int_int_struct, int_struct

from migrator.zk.connect_string import split_connect


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


def expire_session(zookeeper: str, client: KazooClient, timeout_s: float = 10.0) -> None:
    """Expire `client`'s session now: a second connection attaches to it (its id and password) and closes it,
    both requests in one write, and returns once the server has hung up after the close.

    Attaching makes the server close `client`'s connection, so `client` sees SUSPENDED at once and LOST when it
    reconnects; the close, read from the same buffer right after the attach, ends the session (and deletes its
    ephemerals) before `client` can reconnect. Attaching and closing in two steps would let `client` reconnect
    to the still-live session in between: the session then survives, or ends while `client` stays attached,
    unnotified (the server closes only the connection that asked, and drops a gone session's requests, pings
    included), until its read timeout, two thirds of the session timeout."""
    session_id, password = client.client_id
    host, _, port = split_connect(zookeeper)[0].split(",")[0].rpartition(":")
    attach = Connect(0, 0, int(client._session_timeout), session_id, password, False).serialize()
    close = int_int_struct.pack(1, Close.type)  # request header (xid, op); a close has no body
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(_framed(attach) + _framed(close))
        while sock.recv(4096):  # the attach's answer, the close's, then the server hangs up
            pass


def _framed(payload: bytes) -> bytes:
    return int_struct.pack(len(payload)) + payload
