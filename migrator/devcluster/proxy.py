"""A loopback TCP proxy that can go silent: a network partition without netem or root.

While silent it neither reads nor writes nor accepts, and it closes nothing: no RST, no FIN, the peers'
bytes simply stop arriving (they pile up in kernel buffers, as they would in a switch that drops them
and a sender that retransmits). Clients then learn of the partition only from their own timeouts, which
is what a real partition tests and a stopped process (whose sockets close at once) does not. A new
connection still completes its handshake in the kernel's backlog, then sees no byte either. `resume()`
forwards again, including whatever was queued; connections a client gave up on meanwhile close normally.

One thread and one selector serve every connection of a proxy; it lives in the process that created it.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
from dataclasses import dataclass, field
from types import TracebackType

from migrator.devcluster.ports import HOST

CHUNK = 65536
HIGH_WATER = 1 << 20  # stop reading a side while this much waits to be written to the other
SILENT_POLL_S = 0.05


@dataclass(eq=False)
class _End:
    """One socket of a proxied connection and the bytes waiting to be written to it."""

    sock: socket.socket
    pending: bytearray = field(default_factory=bytearray)
    peer: _End | None = None
    eof: bool = False


class SilentProxy:
    """Forward `HOST:port` to `HOST:target_port` until `silence()`; `resume()` forwards again."""

    def __init__(self, target_port: int, listen_port: int = 0) -> None:
        self.target_port = target_port
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((HOST, listen_port))
        self._listener.listen(128)
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._ends: set[_End] = set()
        self._silent = threading.Event()
        self._halted = threading.Event()  # the loop has seen `_silent` and forwards nothing more
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"silent-proxy-{self.port}", daemon=True)

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def silent(self) -> bool:
        return self._silent.is_set()

    def start(self) -> SilentProxy:
        """Begin forwarding (idempotent, so `with SilentProxy(...).start()` works too)."""
        if self._thread.ident is None:
            self._thread.start()
        return self

    def silence(self) -> None:
        """Stop forwarding and accepting; every socket stays open. Returns once no byte passes any more."""
        self._halted.clear()
        self._silent.set()
        if self._thread.is_alive():
            self._halted.wait(timeout=5.0)

    def resume(self) -> None:
        self._silent.clear()

    def close(self) -> None:
        """Stop the proxy and close every socket (the peers then see a normal close)."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        for end in list(self._ends):
            self._drop(end)
        with contextlib.suppress(OSError):
            self._selector.unregister(self._listener)
        self._listener.close()
        self._selector.close()

    def __enter__(self) -> SilentProxy:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ----- the loop -----------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping.is_set():
            if self._silent.is_set():
                self._halted.set()
                self._stopping.wait(SILENT_POLL_S)
                continue
            for key, events in self._selector.select(timeout=SILENT_POLL_S):
                if key.data is None:
                    self._accept()
                    continue
                end: _End = key.data
                if end not in self._ends:
                    continue  # dropped earlier in this round
                if events & selectors.EVENT_WRITE:
                    self._flush(end)
                if events & selectors.EVENT_READ and end in self._ends:
                    self._read(end)

    def _accept(self) -> None:
        try:
            client, _ = self._listener.accept()
        except BlockingIOError:
            return
        try:
            upstream = socket.create_connection((HOST, self.target_port), timeout=2.0)
        except OSError:
            client.close()  # nothing listens behind the proxy: the client sees what it would without it
            return
        a, b = _End(client), _End(upstream)
        a.peer, b.peer = b, a
        for end in (a, b):
            end.sock.setblocking(False)
            end.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._ends.add(end)
            self._selector.register(end.sock, selectors.EVENT_READ, end)

    def _read(self, end: _End) -> None:
        peer = end.peer
        assert peer is not None
        try:
            data = end.sock.recv(CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            end.eof = True
            self._close_pair_when_flushed(end)
            return
        peer.pending += data
        self._flush(peer)

    def _flush(self, end: _End) -> None:
        if end.pending:
            try:
                sent = end.sock.send(end.pending)
            except BlockingIOError:
                sent = 0
            except OSError:
                self._drop_pair(end)
                return
            del end.pending[:sent]
        if end.peer is not None and end.peer.eof and not end.pending:
            self._drop_pair(end)
            return
        self._update_interest(end)
        if end.peer is not None:
            self._update_interest(end.peer)

    def _close_pair_when_flushed(self, end: _End) -> None:
        peer = end.peer
        if peer is None or not peer.pending:
            self._drop_pair(end)
        else:
            self._update_interest(end)

    def _update_interest(self, end: _End) -> None:
        """Read while the peer is not backed up, write while bytes wait."""
        if end not in self._ends:
            return
        peer = end.peer
        events = 0
        if not end.eof and (peer is None or len(peer.pending) < HIGH_WATER):
            events |= selectors.EVENT_READ
        if end.pending:
            events |= selectors.EVENT_WRITE
        try:
            if events:
                self._selector.modify(end.sock, events, end)
            else:
                self._selector.unregister(end.sock)  # read side done, nothing to write: wait for the peer
        except KeyError:
            if events:
                self._selector.register(end.sock, events, end)

    def _drop_pair(self, end: _End) -> None:
        self._drop(end)
        if end.peer is not None:
            self._drop(end.peer)

    def _drop(self, end: _End) -> None:
        if end not in self._ends:
            return
        self._ends.discard(end)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self._selector.unregister(end.sock)
        end.sock.close()
