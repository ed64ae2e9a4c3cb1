"""Loopback ports: pick free ones, check that one is free, wait until one accepts connections."""

from __future__ import annotations

import random
import socket
import time
from pathlib import Path

from migrator.errors import EnvironmentProblem

HOST = "127.0.0.1"


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A free port below the kernel's ephemeral range.

    Outside that range so that, while a broker is stopped in a fault drill, no client socket can be
    given its port as a local port and block the restart on the same port.
    """
    low, _ = _ephemeral_range()
    candidates = list(range(20000, low)) if low > 21000 else []
    for port in random.sample(candidates, min(50, len(candidates))):
        if is_port_free(port):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def is_port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


def ensure_port_free(port: int, what: str) -> None:
    if not is_port_free(port):
        raise EnvironmentProblem(
            f"port {HOST}:{port} for {what} is in use: stop whatever listens there "
            f"(`ss -ltnp 'sport = :{port}'`) or run `migrator dev-cluster down`"
        )


def accepts(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def four_letter_word(port: int, word: str, timeout: float = 2.0) -> str:
    """Send a ZooKeeper four-letter word and return the whole answer ('' when unreachable)."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as sock:
            sock.sendall(word.encode("ascii"))
            chunks: list[bytes] = []
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
            return b"".join(chunks).decode("utf-8", errors="replace")
    except OSError:
        return ""
