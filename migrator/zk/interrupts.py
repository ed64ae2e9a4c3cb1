"""Where a Ctrl-C must not land in a ZooKeeper call, told from the frame a signal interrupted.

kazoo's client (module `kazoo.client`) queues each request and wakes its connection thread inside a bare
`except:`: a KeyboardInterrupt raised there is swallowed, the request is failed with ConnectionClosedError
although it was sent, and the client can be left waiting for replies that no longer reach anyone. Waiting
for a reply is different: that happens in kazoo's handlers (or the threading module), where a
KeyboardInterrupt is safe and is what stops a call blocked on an unreachable server.

So a signal handler asks `in_request_queueing(frame)`: walking out from the interrupted frame, is the first
frame of kazoo's code the client module itself? Frames of other code inside it (the threading module, a
tracer) are looked through. The answer needs no kazoo internals, only the module name of `KazooClient`.
`KazooClient.start()` waits in the client module too, so the commands connect with `start_async()`
(`migrator.zk.client.connect`), whose wait stays interruptible.
"""

from __future__ import annotations

from types import FrameType

from kazoo.client import KazooClient

_KAZOO = "kazoo"
_CLIENT_MODULE = KazooClient.__module__


def _module_of(frame: FrameType) -> str:
    return str(frame.f_globals.get("__name__", ""))


def in_request_queueing(frame: FrameType | None) -> bool:
    """Whether the code a signal interrupted is kazoo's client queueing a request (hold the signal), not
    kazoo waiting for a reply or code outside kazoo (raise it)."""
    while frame is not None:
        module = _module_of(frame)
        if module == _KAZOO or module.startswith(_KAZOO + "."):
            return module == _CLIENT_MODULE
        frame = frame.f_back
    return False
