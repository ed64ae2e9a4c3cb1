"""A one-line progress display for long waits: rewritten in place on a terminal, silent otherwise, so
logs and pipes get no carriage returns or repeated lines."""

from __future__ import annotations

import time
from typing import Protocol, TextIO


class Progress(Protocol):
    """A waiting state that says itself in one short line."""

    def summary(self) -> str: ...


class ProgressLine:
    """`show(state)` rewrites one line (`\\r` + clear to end of line) on `stream` if it is a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.enabled = stream.isatty()
        self._started = time.monotonic()
        self._shown = False

    def show(self, state: Progress) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self._started
        self._stream.write(f"\r\x1b[Kwaiting {elapsed:.0f}s: {state.summary()}")
        self._stream.flush()
        self._shown = True

    def clear(self) -> None:
        if self._shown:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._shown = False
