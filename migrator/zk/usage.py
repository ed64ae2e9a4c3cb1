"""Who uses an ensemble besides the groups' trees: its connected clients (`cons`), the sessions that hold
ephemeral nodes (`dump`), and the brokers' sessions under /brokers/ids.

The four-letter words go to every server of the connect string on its plain client port; a server that
does not allow one (`4lw.commands.whitelist`) or cannot be reached leaves that part unknown (None), never
empty.
"""

from __future__ import annotations

import re
import socket
import time
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from migrator.zk.connect_string import split_connect

DEFAULT_PORT = 2181
_CONS = re.compile(r"^\s*/?(?P<address>\S+?)\[\d+\]\((?P<fields>.*)\)\s*$")
_SESSION = re.compile(r"^(0x[0-9a-fA-F]+):?\s*$")


@dataclass(frozen=True, slots=True)
class ServerUse:
    """What the servers of one ensemble said; None where none of them answered."""

    clients: dict[int, str] | None  # session id -> client address (`cons`)
    ephemerals: dict[int, tuple[str, ...]] | None  # session id -> its ephemeral paths (`dump`)


def servers(connect: str) -> list[tuple[str, int]]:
    """(host, port) of every server of a connect string (its chroot ignored; `[v6]:port` allowed)."""
    found = []
    for item in (i.strip() for i in split_connect(connect)[0].split(",")):
        if item.startswith("["):
            host, _, rest = item[1:].partition("]")
            port = rest.lstrip(":")
        else:
            host, _, port = item.partition(":")
        found.append((host, int(port) if port.isdigit() else DEFAULT_PORT))
    return found


def four_letter_word(host: str, port: int, word: str, timeout_s: float = 2.0) -> str | None:
    """The server's whole answer, or None when it is unreachable or does not allow the word."""
    chunks: list[bytes] = []
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(word.encode("ascii"))
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and (chunk := sock.recv(65536)):
                chunks.append(chunk)
    except OSError:
        return None
    text = b"".join(chunks).decode("utf-8", errors="replace")
    return None if not text or "not in the whitelist" in text or "not executed" in text else text


def parse_cons(text: str) -> dict[int, str]:
    """`cons`: session id -> client address, for connections that have a session (not the asking one)."""
    found = {}
    for line in text.splitlines():
        match = _CONS.match(line)
        fields = dict(f.split("=", 1) for f in match.group("fields").split(",") if "=" in f) if match else {}
        if match and "sid" in fields:
            found[int(fields["sid"], 16)] = match.group("address")
    return found


def parse_dump(text: str) -> dict[int, tuple[str, ...]]:
    """`dump`'s "Sessions with Ephemerals" part: session id -> its ephemeral paths."""
    found: dict[int, list[str]] = {}
    session: int | None = None
    listing = False
    for line in text.splitlines():
        listing = listing or line.startswith("Sessions with Ephemerals")
        if not listing:
            continue
        if match := _SESSION.match(line.strip()):
            session = int(match.group(1), 16)
            found.setdefault(session, [])
        elif line.strip().startswith("/") and session is not None:
            found[session].append(line.strip())
    return {s: tuple(paths) for s, paths in found.items()}


def server_use(connect: str, timeout_s: float = 2.0) -> ServerUse:
    """`cons` and `dump` of every server of the ensemble, merged."""
    clients: dict[int, str] | None = None
    ephemerals: dict[int, tuple[str, ...]] | None = None
    for host, port in servers(connect):
        if (cons := four_letter_word(host, port, "cons", timeout_s)) is not None:
            clients = {**(clients or {}), **parse_cons(cons)}
        if (dump := four_letter_word(host, port, "dump", timeout_s)) is not None:
            ephemerals = {**(ephemerals or {}), **parse_dump(dump)}
    return ServerUse(clients, ephemerals)


def broker_sessions(zk: KazooClient) -> dict[str, int]:
    """Broker id -> the session that holds its /brokers/ids node (KRaft or no broker: empty)."""
    try:
        ids = zk.get_children("/brokers/ids")
    except NoNodeError:
        return {}
    found = {}
    for broker in ids:
        stat = zk.exists(f"/brokers/ids/{broker}")
        if stat is not None:
            found[broker] = stat.ephemeralOwner
    return found


def own_session(zk: KazooClient) -> int | None:
    client_id = zk.client_id
    return client_id[0] if client_id else None
