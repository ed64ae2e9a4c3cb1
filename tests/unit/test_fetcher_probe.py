"""The fetcher's check that a bootstrap server answers before it replaces a resting client (a loopback socket)."""

from __future__ import annotations

import socket

from migrator.kafka.stranding import bootstrap_answers


def test_a_listening_bootstrap_server_answers_and_a_closed_port_does_not() -> None:
    with socket.socket() as listening, socket.socket() as closed:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        closed.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        port, dead = listening.getsockname()[1], closed.getsockname()[1]
        assert bootstrap_answers(f"127.0.0.1:{dead}, PLAINTEXT://127.0.0.1:{port}")
        assert not bootstrap_answers(f"127.0.0.1:{dead}")
        assert not bootstrap_answers("no-port-here")
