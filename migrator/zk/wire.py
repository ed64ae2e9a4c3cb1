"""A read-only ZooKeeper session on one socket, for the fleet scan's bulk reads.

kazoo sends each request from its connection thread: one socket write, one wake-up byte and one thread
hand-over per request, so on a busy machine a fleet scan spends its time switching threads, not waiting for
ZooKeeper. Here the caller's thread writes a whole window of requests at once and reads the answers in
order (ZooKeeper answers one session's requests in the order they were sent): the same reads, without the
hand-overs. It speaks the wire protocol through kazoo's own request classes and reads no watch, so it needs
no ping thread: a session lives for one chunk of groups and is closed. With `ZkTls` (Kafka's
`zookeeper.ssl.*`) the socket is wrapped in TLS with the same CA, client certificate and name check as kazoo's.

It is a `ReadPipeline` for `migrator.zk.group_reader.read_groups_with_layout`.

kazoo's serialization classes are not part of its public API, so the client runs only with the kazoo it was
checked against (`WIRE_KAZOO`, the version `constraints.txt` pins): any other raises `WireKazooMismatch`
before a byte is sent. kazoo's public asynchronous calls read the same groups at about half the speed: with
them the scan no longer reads twice as fast as one process.
"""

from __future__ import annotations

import contextlib
import random
import socket
import ssl
import struct
from collections.abc import Callable
from types import TracebackType
from typing import Any

from kazoo import version as kazoo_version
from kazoo.exceptions import EXCEPTIONS, NoNodeError
from kazoo.protocol.serialization import Auth, Close, Connect, Exists, GetChildren, GetData, ReplyHeader

from migrator.errors import MigratorError
from migrator.zk.client import ZkTls, ZooKeeperUnavailable, parse_auth
from migrator.zk.group_reader import MISSING

WIRE_KAZOO = "2.11.0"
"""The kazoo whose private request classes this client was checked against (pinned in constraints.txt)."""

WINDOW = 2000
"""Requests written before their answers are read: bounds both sides' socket buffers."""
_LENGTH = struct.Struct("!i")
_HEADER = struct.Struct("!ii")
_AUTH_XID = -4
_PING_XID = -2
_WATCH_XID = -1
Request = Any  # kazoo's Exists, GetData or GetChildren (untyped)


class WireKazooMismatch(MigratorError):
    """The installed kazoo is not the one the wire client was checked against."""


def require_wire_kazoo() -> None:
    """Refuse to speak the wire protocol through a kazoo whose private classes may have changed."""
    installed = kazoo_version.__version__
    if installed != WIRE_KAZOO:
        raise WireKazooMismatch(
            f"kazoo {installed} is installed, but the fleet scan's ZooKeeper reader was checked against kazoo "
            f"{WIRE_KAZOO} only: install kazoo=={WIRE_KAZOO} (constraints.txt)"
        )


def wire_supported(auth: str | None) -> bool:
    """Digest identities and none; SASL needs kazoo's handshake."""
    return parse_auth(auth)[1] is None


def _tls_context(tls: ZkTls) -> ssl.SSLContext:
    """The client side of ZooKeeper's secure port, as `migrator.zk.client.connect` sets kazoo up."""
    context = ssl.create_default_context(cafile=tls.ca)
    context.check_hostname = tls.check_hostname
    if tls.keystore is not None:
        context.load_cert_chain(tls.keystore, password=tls.keystore_password)
    return context


def _hosts_and_chroot(connect_string: str) -> tuple[list[tuple[str, int]], str]:
    hosts, _, chroot = connect_string.partition("/")
    pairs = []
    for host in hosts.split(","):
        name, _, port = host.strip().rpartition(":")
        pairs.append((name.strip("[]"), int(port)))
    random.shuffle(pairs)
    return pairs, ("/" + chroot).rstrip("/") if chroot else ""


class WireSession:
    """One session: `children`/`get`/`exists` queue a read, `drain` sends them and calls each callback with the
    result (`MISSING` for a node that does not exist); other errors raise kazoo's exception."""

    def __init__(self, connect_string: str, auth: str | None, timeout_s: float, tls: ZkTls | None = None) -> None:
        require_wire_kazoo()
        hosts, self._chroot = _hosts_and_chroot(connect_string)
        self._tls = _tls_context(tls) if tls is not None else None
        self._sock = self._open(hosts, timeout_s)
        self._in = self._sock.makefile("rb")
        self._xid = 0
        self._pending: list[tuple[Request, Callable[[Any], None]]] = []
        for scheme, credential in parse_auth(auth)[0]:
            self._send([(_AUTH_XID, Auth(0, scheme, credential))])
            self._expect_ok(_AUTH_XID)

    def _open(self, hosts: list[tuple[str, int]], timeout_s: float) -> socket.socket:
        for host, port in hosts:
            try:
                sock = socket.create_connection((host, port), timeout=timeout_s)
                if self._tls is not None:
                    sock = self._tls.wrap_socket(sock, server_hostname=host)
            except OSError:  # ssl.SSLError is one
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            body = Connect(0, 0, int(timeout_s * 1000), 0, b"\x00" * 16, False).serialize()
            sock.sendall(_LENGTH.pack(len(body)) + body)
            try:
                reply = self._frame_of(sock.makefile("rb"))
            except OSError:
                sock.close()
                continue
            if Connect.deserialize(reply, 0)[0].session_id:
                return sock
            sock.close()
        raise ZooKeeperUnavailable(f"ZooKeeper at {','.join(f'{h}:{p}' for h, p in hosts)} did not accept a session")

    @staticmethod
    def _frame_of(stream: Any) -> bytes:
        head = stream.read(_LENGTH.size)
        if len(head) < _LENGTH.size:
            raise ConnectionError("ZooKeeper closed the connection")
        (length,) = _LENGTH.unpack(head)
        return bytes(stream.read(length))

    def _send(self, requests: list[tuple[int, Any]]) -> None:
        out = bytearray()
        for xid, request in requests:
            body = _HEADER.pack(xid, request.type) + request.serialize()
            out += _LENGTH.pack(len(body)) + body
        self._sock.sendall(out)

    def _reply(self) -> tuple[ReplyHeader, bytes, int]:
        while True:
            frame = self._frame_of(self._in)
            header, offset = ReplyHeader.deserialize(frame, 0)
            if header.xid not in (_PING_XID, _WATCH_XID):
                return header, frame, offset

    def _expect_ok(self, xid: int) -> None:
        header, _, _ = self._reply()
        if header.xid != xid or header.err:
            raise EXCEPTIONS[header.err]() if header.err else ConnectionError("ZooKeeper answered out of order")

    def children(self, path: str, on_result: Callable[[Any], None]) -> None:
        self._pending.append((GetChildren(self._chroot + path, False), on_result))

    def get(self, path: str, on_result: Callable[[Any], None]) -> None:
        self._pending.append((GetData(self._chroot + path, False), on_result))

    def exists(self, path: str, on_result: Callable[[Any], None]) -> None:
        self._pending.append((Exists(self._chroot + path, False), on_result))

    def drain(self) -> None:
        pending, self._pending = self._pending, []
        for start in range(0, len(pending), WINDOW):
            window = pending[start : start + WINDOW]
            first = self._xid + 1
            self._xid += len(window)
            self._send([(first + i, request) for i, (request, _) in enumerate(window)])
            for i, (request, on_result) in enumerate(window):
                header, frame, offset = self._reply()
                if header.xid != first + i:
                    raise ConnectionError(f"ZooKeeper answered {header.xid}, expected {first + i}")
                on_result(self._result(request, header, frame, offset))

    @staticmethod
    def _result(request: Request, header: ReplyHeader, frame: bytes, offset: int) -> Any:
        if header.err == 0:
            return request.deserialize(frame, offset)
        error = EXCEPTIONS[header.err]
        if error is NoNodeError:
            return None if isinstance(request, Exists) else MISSING
        raise error()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._send([(self._xid + 1, Close())])
        self._in.close()
        self._sock.close()

    def __enter__(self) -> WireSession:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()
