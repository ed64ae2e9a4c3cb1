"""The silent proxy: forwards both ways, goes silent without closing anything, and resumes."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from migrator.devcluster.proxy import SilentProxy


@pytest.fixture
def echo_server() -> Iterator[socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    yield server
    server.close()


def _pair(server: socket.socket) -> tuple[SilentProxy, socket.socket, socket.socket]:
    proxy = SilentProxy(server.getsockname()[1]).start()
    client = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    upstream, _ = server.accept()
    upstream.settimeout(5)
    return proxy, client, upstream


def test_bytes_flow_both_ways(echo_server: socket.socket) -> None:
    proxy, client, upstream = _pair(echo_server)
    with proxy, client, upstream:
        client.sendall(b"ping")
        assert upstream.recv(10) == b"ping"
        upstream.sendall(b"pong")
        assert client.recv(10) == b"pong"


def test_silence_stops_bytes_without_closing_and_resume_delivers_them(echo_server: socket.socket) -> None:
    proxy, client, upstream = _pair(echo_server)
    with proxy, client, upstream:
        proxy.silence()
        client.sendall(b"lost?")
        upstream.settimeout(0.5)
        with pytest.raises(socket.timeout):  # neither data nor EOF (recv would return b"") nor RST
            upstream.recv(10)
        proxy.resume()
        upstream.settimeout(5)
        assert upstream.recv(10) == b"lost?"


def test_a_closed_client_closes_its_upstream(echo_server: socket.socket) -> None:
    proxy, client, upstream = _pair(echo_server)
    with proxy, upstream:
        client.close()
        assert upstream.recv(10) == b""


def test_nothing_behind_the_proxy_closes_the_client() -> None:
    with socket.create_server(("127.0.0.1", 0)) as gone:
        port = gone.getsockname()[1]
    with SilentProxy(port) as proxy, socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as client:
        assert client.recv(10) == b""
