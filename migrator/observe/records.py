"""What the application processed, and when: one `Processed` per record, written by the thread itself.

Clock: every time is `time.time_ns()` (wall clock) by default. Member *processes* and the owners watcher
must share one clock, and the watcher dates claims with ZooKeeper's own `ctime` (the server's wall clock),
so a monotonic clock would not be comparable. All processes run on one host, so they read the same system
clock; a step of that clock (NTP) during a run would distort intervals. For in-process interval checks
only (`overlaps`, `duplicates`) any nanosecond clock may be passed as `clock`.

A record counts as processed by the connector once its thread asks for the next record, so the
application logs `end` just *before* doing so: the logged interval covers the whole time it held it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

Clock = Callable[[], int]

_FIELDS = ("member", "thread_id", "topic", "partition", "offset", "start_ns", "end_ns")


@dataclass(frozen=True, slots=True)
class Processed:
    """One record processed by one thread of one member (a member = one connector instance / process)."""

    member: str
    thread_id: str
    topic: str
    partition: int
    offset: int
    start_ns: int
    end_ns: int

    @property
    def key(self) -> tuple[str, int, int]:
        """(topic, partition, offset): the identity of the Kafka record."""
        return (self.topic, self.partition, self.offset)

    @property
    def worker(self) -> tuple[str, str]:
        """(member, thread_id): who processed it. Two processes reusing one consumer.id stay distinct."""
        return (self.member, self.thread_id)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> Processed:
        obj = json.loads(line)
        if not isinstance(obj, dict) or set(obj) != set(_FIELDS):
            raise ValueError(f"not a processed-record line: {line[:80]!r}")
        return cls(**obj)


@dataclass(frozen=True, slots=True)
class Handle:
    """Returned by `ProcessingLog.start`; pass it to `end`."""

    member: str
    thread_id: str
    topic: str
    partition: int
    offset: int
    start_ns: int
    serial: int


class ProcessingLog:
    """Thread-safe log of processed records, kept in memory and optionally appended to a JSONL file.

    With a `sink`, each finished record is written as one line and flushed at once, so after `kill -9`
    the file holds every record whose `end` returned (at most the last line is torn). Records started but
    never ended (in flight at a crash) are in `in_flight()` only, never in the file.
    """

    def __init__(self, sink: str | Path | None = None, clock: Clock = time.time_ns, fsync: bool = False) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._records: list[Processed] = []
        self._open: dict[int, Handle] = {}
        self._serial = itertools.count()
        self._fsync = fsync
        self._file: IO[str] | None = open(sink, "a", encoding="utf-8") if sink is not None else None  # noqa: SIM115
        self.path = Path(sink) if sink is not None else None

    def start(self, member: str, thread_id: str, topic: str, partition: int, offset: int) -> Handle:
        handle = Handle(member, thread_id, topic, partition, offset, self._clock(), next(self._serial))
        with self._lock:
            self._open[handle.serial] = handle
        return handle

    def end(self, handle: Handle) -> Processed:
        record = Processed(
            handle.member,
            handle.thread_id,
            handle.topic,
            handle.partition,
            handle.offset,
            handle.start_ns,
            self._clock(),
        )
        with self._lock:
            self._open.pop(handle.serial, None)
            self._records.append(record)
            if self._file is not None:
                self._file.write(record.to_json() + "\n")  # one write per line: a crash tears at most the last
                self._file.flush()
                if self._fsync:
                    os.fsync(self._file.fileno())
        return record

    def extend(self, records: Iterable[Processed]) -> None:
        """Add records another process finished (e.g. a member running as a child process), on its clock."""
        with self._lock:
            for record in records:
                self._records.append(record)
                if self._file is not None:
                    self._file.write(record.to_json() + "\n")
            if self._file is not None:
                self._file.flush()

    @contextlib.contextmanager
    def processing(self, member: str, thread_id: str, topic: str, partition: int, offset: int) -> Iterator[None]:
        """`with log.processing(...):` around the application's work on one record."""
        handle = self.start(member, thread_id, topic, partition, offset)
        yield
        self.end(handle)

    def records(self) -> list[Processed]:
        with self._lock:
            return list(self._records)

    def in_flight(self) -> list[Handle]:
        with self._lock:
            return list(self._open.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> ProcessingLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load_jsonl(path: str | Path) -> list[Processed]:
    """Read a JSONL processing log. A torn *last* line (kill -9 mid-write) is dropped; a bad line anywhere
    else means the file is not what we wrote, so it raises ValueError instead of hiding lost records."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    lines = text.split("\n")
    torn_tail = lines.pop()  # "" when the file ends with a newline, else an unterminated (torn) line
    out: list[Processed] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(Processed.from_json(line))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: corrupt processing-log line") from exc
    if torn_tail.strip():
        with contextlib.suppress(ValueError, TypeError):
            out.append(Processed.from_json(torn_tail))  # complete JSON that only lacks its newline
    return out


def load_many(paths: Iterable[str | Path]) -> list[Processed]:
    """All records of several members' logs (missing files count as empty: the member never processed)."""
    out: list[Processed] = []
    for path in paths:
        if Path(path).exists():
            out.extend(load_jsonl(path))
    return out


class JsonlTail:
    """Reads a member's JSONL processing log incrementally while the member is still writing it: each `read`
    returns only the records completed since the last one. Long runs (drills with minute-long outages, the
    soak) poll their logs many times; re-reading whole files each time would load the host they measure."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._pos = 0

    def read(self) -> list[Processed]:
        """New complete lines (an unterminated last line waits for its newline: it may still be written)."""
        if not self.path.exists():
            return []
        with open(self.path, "rb") as f:
            f.seek(self._pos)
            chunk = f.read()
        end = chunk.rfind(b"\n") + 1
        self._pos += end
        out: list[Processed] = []
        for line in chunk[:end].decode("utf-8", errors="replace").split("\n"):
            if line.strip():
                out.append(Processed.from_json(line))
        return out
