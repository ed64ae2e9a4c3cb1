"""Opening a kazoo client the same way everywhere: chroot, bounded connect time, and authentication (the connect
string and identity are parsed in `migrator.zk.connect_string`)."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
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
from migrator.zk.interrupts import InterruptSafeClient

__all__ = [
    "AUTH_FORMS",
    "CONNECT_FORM",
    "CountingClient",
    "ZkIdentity",
    "ZkTls",
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
    "zk_tls",
]

DEFAULT_CONNECT_TIMEOUT_S = 10.0


ZK_TLS_PREFIX = "zookeeper.ssl."
ZK_CNXN_SOCKET = "zookeeper.clientCnxnSocket"
_TLS_IGNORED = frozenset({"zookeeper.ssl.truststore.password"})
"""Kafka keys a PEM file makes unnecessary: accepted, not used."""
_TLS_KEYS = frozenset(
    {
        "zookeeper.ssl.client.enable",
        "zookeeper.ssl.truststore.location",
        "zookeeper.ssl.truststore.type",
        "zookeeper.ssl.keystore.location",
        "zookeeper.ssl.keystore.password",
        "zookeeper.ssl.keystore.type",
        "zookeeper.ssl.endpoint.identification.algorithm",
    }
)


@dataclass(frozen=True, slots=True)
class ZkTls:
    """How to reach ZooKeeper's TLS client port (`secureClientPort`), from Kafka's own ZooKeeper client keys
    (KIP-515) with PEM files: `zookeeper.ssl.truststore.location` is the CA bundle, `...keystore.location` one
    file holding the client's certificate chain and private key (Kafka's PEM keystore)."""

    ca: str | None = None
    """The CA bundle that signed the server's certificate; None: the system's CAs."""
    keystore: str | None = None
    """The client's certificate and key (PEM, both in one file); None: no client certificate."""
    keystore_password: str | None = None
    check_hostname: bool = True
    """`zookeeper.ssl.endpoint.identification.algorithm`: `HTTPS` (Kafka's default) checks the server's name
    or IP against its certificate; empty turns the check off."""

    def kazoo_options(self) -> dict[str, object]:
        return {
            "use_ssl": True,
            "ca": self.ca,
            "certfile": self.keystore,
            "keyfile": self.keystore,
            "keyfile_password": self.keystore_password,
            "verify_certs": True,
            "check_hostname": self.check_hostname,
        }


def is_zk_tls_key(key: str) -> bool:
    """Whether a property configures the ZooKeeper client's TLS (not a Kafka client's)."""
    return key.startswith(ZK_TLS_PREFIX) or key == ZK_CNXN_SOCKET


def _pem_only(props: Mapping[str, str], store: str) -> str | None:
    kind = props.get(f"{ZK_TLS_PREFIX}{store}.type", "PEM").strip().upper()
    if kind != "PEM":
        return (
            f"{ZK_TLS_PREFIX}{store}.type={kind}: only PEM files are supported "
            "(convert with `openssl pkcs12 -in store.p12 -out store.pem -nodes`)"
        )
    return None


def zk_tls(props: Mapping[str, str]) -> ZkTls | None:
    """The TLS settings of the ZooKeeper client from `zookeeper.ssl.*` (None unless
    `zookeeper.ssl.client.enable=true`); raises `ConfigError` naming every key it cannot honour."""
    tls = {k: v.strip() for k, v in props.items() if is_zk_tls_key(k)}
    problems = [f"{k}: unknown ZooKeeper TLS property" for k in sorted(tls)
                if k.startswith(ZK_TLS_PREFIX) and k not in _TLS_KEYS | _TLS_IGNORED]  # fmt: skip
    enable = tls.get(f"{ZK_TLS_PREFIX}client.enable", "false").lower()
    if enable not in ("true", "false"):
        problems.append(f"{ZK_TLS_PREFIX}client.enable: expected true or false, not {enable!r}")
    problems += [p for store in ("truststore", "keystore") if (p := _pem_only(tls, store)) is not None]
    algorithm = tls.get(f"{ZK_TLS_PREFIX}endpoint.identification.algorithm", "HTTPS").upper()
    if algorithm not in ("HTTPS", ""):
        problems.append(f"{ZK_TLS_PREFIX}endpoint.identification.algorithm: expected HTTPS or empty, not {algorithm!r}")
    if problems:
        error = ConfigError("; ".join(problems))
        error.problems = tuple(problems)
        raise error
    if enable != "true":
        return None
    return ZkTls(
        ca=tls.get(f"{ZK_TLS_PREFIX}truststore.location") or None,
        keystore=tls.get(f"{ZK_TLS_PREFIX}keystore.location") or None,
        keystore_password=tls.get(f"{ZK_TLS_PREFIX}keystore.password") or None,
        check_hostname=algorithm == "HTTPS",
    )


class CountingClient(InterruptSafeClient):
    """The product's client: interrupt-safe, and counting the requests it sends by kazoo's request type
    (`GetData`, `Create`, `Transaction`, ...) in `requests_sent`: what a member costs ZooKeeper, read by its
    tests and benchmarks. Pings and the session's connect are not the application's and are not counted."""

    requests_sent: Counter[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.requests_sent = Counter()
        super().__init__(*args, **kwargs)

    def _call(self, request: Any, async_object: Any) -> Any:
        self.requests_sent[type(request).__name__] += 1
        return super()._call(request, async_object)


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
    tls: ZkTls | None = None,
) -> KazooClient:
    """A started client (over TLS with `tls`); raises `ZooKeeperUnavailable` after `timeout_s` instead of
    hanging. Its calls flag their request queueing, the one place a Ctrl-C must not be raised
    (`migrator.zk.interrupts`)."""
    auth_data, sasl_options = parse_auth(auth)
    quiet = _QuietUntilConnected(logging.getLogger("kazoo.client"), {})
    client = CountingClient(
        logger=quiet,
        hosts=hosts,
        timeout=session_timeout_s,
        auth_data=auth_data or None,
        sasl_options=sasl_options,
        read_only=read_only,
        connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
        **(tls.kazoo_options() if tls is not None else {}),
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
