"""Opening a kazoo client the same way everywhere: chroot, bounded connect time, and authentication."""

from __future__ import annotations

import logging
from typing import Any

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.security import make_digest_acl_credential

from migrator.errors import ConfigError, MigratorError

DEFAULT_CONNECT_TIMEOUT_S = 10.0


class ZooKeeperUnavailable(MigratorError):
    """ZooKeeper did not answer within the connect timeout."""


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
    allowed = "digest:user:password, sasl, sasl:user:password"
    raise ConfigError(f"zookeeper.auth: {auth.split(':', 1)[0]!r} is not one of {allowed}")


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
    try:
        client.start(timeout=timeout_s)
    except KazooTimeoutError as exc:
        client.close()
        raise ZooKeeperUnavailable(f"ZooKeeper at {hosts} did not answer within {timeout_s:g}s") from exc
    quiet.connected = True
    return client


class _QuietUntilConnected(logging.LoggerAdapter):  # type: ignore[type-arg]
    """kazoo's logger for one client. Until its first connection, kazoo's lines for each attempt (`Connecting
    to`, `Connection dropped`, `Connection time-out`) are DEBUG: the caller gets one clear
    `ZooKeeperUnavailable` instead of a line per retry. Once connected, they keep their own level."""

    connected = False

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if not self.connected and level in (logging.INFO, logging.WARNING):
            level = logging.DEBUG
        super().log(level, msg, *args, **kwargs)
