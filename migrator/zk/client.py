"""Opening a kazoo client the same way everywhere: chroot, bounded connect time, and authentication (the connect
string and identity are parsed in `migrator.zk.connect_string`)."""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

from kazoo.client import KazooClient
from kazoo.security import make_digest_acl_credential

from migrator.errors import ConfigError, MigratorError
from migrator.zk.connect_string import (
    AUTH_FORMS,
    CONNECT_FORM,
    ZkIdentity,
    auth_problem,
    chroot_of,
    connect_problem,
    normalise_connect,
    parse_identity,
    split_connect,
)

__all__ = [
    "AUTH_FORMS",
    "CONNECT_FORM",
    "ZkIdentity",
    "ZooKeeperUnavailable",
    "auth_problem",
    "chroot_of",
    "connect",
    "connect_problem",
    "digest_acl_id",
    "identity_of",
    "normalise_connect",
    "parse_auth",
    "parse_identity",
    "split_connect",
]

DEFAULT_CONNECT_TIMEOUT_S = 10.0


class ZooKeeperUnavailable(MigratorError):
    """ZooKeeper did not answer within the connect timeout."""


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
    identity = parse_identity(auth)
    if identity is None:
        raise ConfigError(f"zookeeper.auth: {auth_problem(auth)}")
    if identity.scheme == "digest":
        return [("digest", f"{identity.user}:{identity.password}")], None
    if identity.user is None:
        return [], {"mechanism": "GSSAPI"}
    return [], {"mechanism": "DIGEST-MD5", "username": identity.user, "password": identity.password}


def digest_acl_id(auth: str) -> str:
    """The ACL id (`user:base64(sha1)`) of a `digest:user:password` identity."""
    identity = parse_identity(auth)
    if identity is None or identity.scheme != "digest":
        raise ConfigError(f"{auth.split(':', 1)[0]!r}: expected digest:user:password")
    return make_digest_acl_credential(identity.user, identity.password)


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
