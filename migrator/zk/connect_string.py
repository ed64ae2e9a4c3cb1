"""ZooKeeper connect strings and identities as the user writes them, parsed once. Pure (no kazoo), so the
configuration can check them before any client exists."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

_HOST_PORT = re.compile(
    r"^(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_-]{1,63}(?:\.[A-Za-z0-9_-]{1,63})*)(?::(?P<port>[0-9]+))?$"
)
"""A host is an ASCII name (dot-separated labels of 1..63 characters) or address: kazoo's resolver fails in
its own thread, with a traceback, on anything else; an internationalised name goes in its xn-- form."""
CONNECT_FORM = "expected host:port[,host:port...][/chroot]"
AUTH_FORMS = "digest:<user>:<password>, sasl, sasl:<user>:<password>"


def split_connect(connect: str) -> tuple[str, str | None]:
    """(hosts, chroot): `h1:2181,h2:2181/kafka` → (`h1:2181,h2:2181`, `/kafka`); the chroot is None when absent."""
    hosts, slash, rest = connect.partition("/")
    return hosts, (slash + rest if slash else None)


def chroot_of(connect: str) -> str | None:
    return split_connect(connect)[1]


def connect_problem(connect: str) -> str | None:
    """Why `connect` is not a ZooKeeper connect string (None: it is one), so every caller can say it in its own
    words (`-z`, `zookeeper.connect`) before kazoo sees it: kazoo fails late, with a traceback."""
    hosts, chroot = split_connect(connect)
    for hp in (h.strip() for h in hosts.split(",")):
        match = _HOST_PORT.match(hp)
        port = match and match.group("port")
        if match is None or (port is not None and not 1 <= int(port) <= 65535):
            return f"{hp!r} in {connect!r} is not host:port; {CONNECT_FORM}"
    if chroot is not None and (
        chroot != chroot.strip() or any(s in ("", ".", "..") for s in chroot.split("/")[1:]) or not chroot.isprintable()
    ):
        return (
            f"chroot {chroot!r} is not a ZooKeeper path (no empty, '.' or '..' segments, no trailing '/'); "
            + CONNECT_FORM
        )
    return None


def normalise_connect(connect: str) -> str:
    """Spaces around hosts removed (call after `connect_problem` found none)."""
    hosts, chroot = split_connect(connect)
    return ",".join(h.strip() for h in hosts.split(",")) + (chroot or "")


@dataclass(frozen=True, slots=True)
class ZkIdentity:
    """Who a client authenticates as: `digest` with a user and password, or `sasl` (GSSAPI without a user,
    DIGEST-MD5 with one)."""

    scheme: Literal["digest", "sasl"]
    user: str | None = None
    password: str | None = None


def parse_identity(auth: str) -> ZkIdentity | None:
    """`digest:user:password`, `sasl` or `sasl:user:password` (the password may contain ':'); None otherwise."""
    scheme, _, rest = auth.partition(":")
    user, sep, password = rest.partition(":")
    has_user = bool(user and sep and password)
    if scheme == "digest" and has_user:
        return ZkIdentity("digest", user, password)
    if scheme == "sasl" and not rest:
        return ZkIdentity("sasl")
    if scheme == "sasl" and has_user:
        return ZkIdentity("sasl", user, password)
    return None


def auth_problem(auth: str) -> str | None:
    """Why `auth` is not a ZooKeeper identity (None: it is one); never repeats the password."""
    if parse_identity(auth) is not None:
        return None
    return f"scheme {auth.partition(':')[0]!r} is not one of {AUTH_FORMS}"
