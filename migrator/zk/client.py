"""Opening a kazoo client the same way everywhere: chroot, bounded connect time, and authentication."""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from typing import Any

from kazoo.client import KazooClient
from kazoo.security import make_digest_acl_credential

from migrator.errors import ConfigError, MigratorError

DEFAULT_CONNECT_TIMEOUT_S = 10.0


class ZooKeeperUnavailable(MigratorError):
    """ZooKeeper did not answer within the connect timeout."""


_HOST_PORT = re.compile(
    r"^(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_-]{1,63}(?:\.[A-Za-z0-9_-]{1,63})*)(?::(?P<port>[0-9]+))?$"
)
"""A host is an ASCII name (dot-separated labels of 1..63 characters) or address: kazoo's resolver fails in
its own thread, with a traceback, on anything else; an internationalised name goes in its xn-- form."""
CONNECT_FORM = "expected host:port[,host:port...][/chroot]"
AUTH_FORMS = "digest:<user>:<password>, sasl, sasl:<user>:<password>"


def connect_problem(connect: str) -> str | None:
    """Why `connect` is not a ZooKeeper connect string (None: it is one). Pure, so every caller can say it
    in its own words (`-z`, `zookeeper.connect`) before kazoo sees it: kazoo fails late, with a traceback."""
    hosts, slash, rest = connect.partition("/")
    chroot = slash + rest
    for hp in (h.strip() for h in hosts.split(",")):
        match = _HOST_PORT.match(hp)
        port = match and match.group("port")
        if match is None or (port is not None and not 1 <= int(port) <= 65535):
            return f"{hp!r} in {connect!r} is not host:port; {CONNECT_FORM}"
    segments = chroot.split("/")[1:]
    if chroot and (chroot != chroot.strip() or any(s in ("", ".", "..") for s in segments) or not chroot.isprintable()):
        return (
            f"chroot {chroot!r} is not a ZooKeeper path (no empty, '.' or '..' segments, no trailing '/'); "
            + CONNECT_FORM
        )
    return None


def normalise_connect(connect: str) -> str:
    """Spaces around hosts removed (call after `connect_problem` found none)."""
    hosts, slash, rest = connect.partition("/")
    return ",".join(h.strip() for h in hosts.split(",")) + slash + rest


def chroot_of(connect: str) -> str | None:
    _hosts, slash, rest = connect.partition("/")
    return slash + rest if slash else None


def auth_problem(auth: str) -> str | None:
    """Why `auth` is not a ZooKeeper identity (None: it is one); never repeats the password."""
    scheme, _, rest = auth.partition(":")
    user, sep, password = rest.partition(":")
    digest_ok = scheme == "digest" and user and sep and password
    sasl_ok = scheme == "sasl" and (not rest or (user and sep and password))
    if digest_ok or sasl_ok:
        return None
    return f"scheme {scheme!r} is not one of {AUTH_FORMS}"


def identity_of(zk: KazooClient) -> str | None:
    """Who a client authenticated as (`digest user 'ops'`), None when anonymous: errors name it."""
    for scheme, credential in getattr(zk, "auth_data", ()) or ():
        if scheme == "digest":
            return f"digest user {str(credential).split(':', 1)[0]!r}"
    if getattr(zk, "sasl_options", None):
        return "a SASL identity"
    return None


def parse_auth(auth: str | None) -> tuple[list[tuple[str, str]], dict[str, object] | None]:
    """`digest:user:password` → kazoo auth_data; `sasl` or `sasl:user:password` → sasl_options."""
    if not auth:
        return [], None
    scheme, _, rest = auth.partition(":")
    if scheme == "digest" and ":" in rest:
        return [("digest", rest)], None
    if scheme == "sasl":
        if not rest:
            return [], {"mechanism": "GSSAPI"}
        user, _, password = rest.partition(":")
        return [], {"mechanism": "DIGEST-MD5", "username": user, "password": password}
    raise ConfigError(f"zookeeper.auth: {auth_problem(auth) or 'malformed'}")


def digest_acl_id(auth: str) -> str:
    """The ACL id (`user:base64(sha1)`) of a `digest:user:password` identity."""
    scheme, _, rest = auth.partition(":")
    user, _, password = rest.partition(":")
    if scheme != "digest" or not user or not password:
        raise ConfigError(f"{auth.split(':', 1)[0]!r}: expected digest:user:password")
    return make_digest_acl_credential(user, password)


def connect(
    hosts: str,
    *,
    auth: str | None = None,
    timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    session_timeout_s: float = 10.0,
    read_only: bool = False,
) -> KazooClient:
    """A started client; raises `ZooKeeperUnavailable` after `timeout_s` instead of hanging."""
    auth_data, sasl_options = parse_auth(auth)
    quiet = _QuietUntilConnected(logging.getLogger("kazoo.client"), {})
    client = KazooClient(
        logger=quiet,
        hosts=hosts,
        timeout=session_timeout_s,
        auth_data=auth_data or None,
        sasl_options=sasl_options,
        read_only=read_only,
        connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
    )
    client.start_async().wait(timeout=timeout_s)
    if not client.connected:
        _stop_in_background(client)
        raise ZooKeeperUnavailable(f"ZooKeeper at {hosts} did not answer within {timeout_s:g}s")
    quiet.connected = True
    return client


def _stop_in_background(client: KazooClient) -> None:
    """Stop a client that never connected without waiting for it. kazoo's own `start(timeout)` stops it in
    line, which waits for the connection attempt in flight: against a listener that accepts but never
    answers (a Kafka port, a silent proxy) that is the session timeout, not the connect timeout."""

    def stop() -> None:
        with contextlib.suppress(Exception):
            client.stop()
            client.close()

    threading.Thread(target=stop, name="zk-stop-unconnected", daemon=True).start()


class _QuietUntilConnected(logging.LoggerAdapter):
    """kazoo's logger for one client. Until its first connection, kazoo's lines for each attempt (`Connecting
    to`, `Connection dropped`, `Connection time-out`) are DEBUG: the caller gets one clear
    `ZooKeeperUnavailable` instead of a line per retry. Once connected, they keep their own level."""

    connected = False

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if not self.connected and level in (logging.INFO, logging.WARNING):
            level = logging.DEBUG
        super().log(level, msg, *args, **kwargs)
