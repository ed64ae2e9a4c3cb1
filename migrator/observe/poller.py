"""`ZooKeeperPoller`: the read loop the observer's watchers share.

A watcher re-reads its part of ZooKeeper after every watch notification and at least every
`poll_interval_s` (a fallback for what a watch cannot catch, such as its own reconnects), one read at a
time, on a daemon thread of its own client. Subclasses implement `_read`: one pipelined read that
re-arms its watches with `_on_watch`. It never writes to ZooKeeper.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Self

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.protocol.states import WatchedEvent

log = logging.getLogger(__name__)

RETRY_AFTER_FAILED_READ_S = 0.05


class ZooKeeperPoller:
    """Use as a context manager or `start()` / `stop()`; `stop` reads once more, so results end with what is there."""

    def __init__(self, zookeeper: str, name: str, poll_interval_s: float) -> None:
        self._zk = KazooClient(hosts=zookeeper, timeout=10.0)
        self._poll_s = poll_interval_s
        self._name = name
        self._read_lock = threading.Lock()  # one read at a time: a stale read applied late would undo a newer one
        self._dirty = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Self:
        self._zk.start(timeout=10.0)
        self._scan()
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._dirty.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)
        try:
            self._scan()  # a last look
        except KazooException:
            log.warning("%s: final read failed", self._name, exc_info=True)
        self._zk.stop()
        self._zk.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _scan(self) -> None:
        with self._read_lock:
            self._read()

    def _read(self) -> None:
        raise NotImplementedError

    def _on_watch(self, _event: WatchedEvent) -> None:
        self._dirty.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._dirty.wait(self._poll_s)
            self._dirty.clear()
            if self._stopping.is_set():
                return
            try:
                self._scan()
            except KazooException:
                log.debug("%s: read failed; retrying", self._name, exc_info=True)
                time.sleep(RETRY_AFTER_FAILED_READ_S)
