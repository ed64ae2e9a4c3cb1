"""Log lines an application sees, from an app of tests/apps/ in its own process."""

from __future__ import annotations

import socket

from tests.apps.run import App


def test_an_unreachable_zookeeper_gives_one_error_and_no_retry_lines() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = App("unreachable.py", f"127.0.0.1:{port}")
    assert app.wait(30) == 1
    assert app.errors == [f"error: ZooKeeper at 127.0.0.1:{port} did not answer within 3s"], app.errors
