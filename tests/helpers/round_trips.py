"""Counting the ZooKeeper round trips a process makes, through kazoo's public calls.

Every kazoo read and write goes through its `*_async` methods (the blocking ones call them and wait), so a
client whose `*_async` methods are wrapped sees every request. A round trip is counted each time the
process waits for an answer after sending something new: a blocking call is one; a pipelined batch (many
requests sent, then their answers awaited) is one, however many requests it holds.

`counting_env` runs a `migrator` subprocess with every client it starts counted, and the counts written as
JSON to a file at exit (`read_counts`), so a command is measured as an operator runs it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

READS = ("get_async", "get_children_async", "exists_async", "get_acls_async")
WRITES = ("create_async", "set_async", "delete_async")


@dataclass
class RoundTripCounter:
    round_trips: int = 0
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    _unanswered: bool = False

    def install(self, zk: Any) -> Any:
        """Count `zk`'s requests from now on (its `*_async` methods wrapped on the instance); returns `zk`."""
        for name in READS + WRITES:
            setattr(zk, name, self._counted(getattr(zk, name), name in READS))
        return zk

    def _counted(self, call: Any, read: bool) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            (self.reads if read else self.writes).append(args[0] if args else kwargs.get("path", ""))
            self._unanswered = True
            result = call(*args, **kwargs)
            if hasattr(result, "get"):
                result.get = self._awaited(result.get)
            return result

        return counted

    def _awaited(self, get: Any) -> Any:
        def awaited(*args: Any, **kwargs: Any) -> Any:
            if self._unanswered:
                self.round_trips += 1
                self._unanswered = False
            return get(*args, **kwargs)

        return awaited

    def counts(self) -> dict[str, Any]:
        return {"round_trips": self.round_trips, "reads": self.reads, "writes": self.writes}


SITECUSTOMIZE = """
import atexit, importlib.util, json, os, sys
from kazoo.client import KazooClient

# loaded by its file, not from a path entry: the process must import its own `migrator`, not this checkout's
_spec = importlib.util.spec_from_file_location("round_trips", {helper!r})
_module = importlib.util.module_from_spec(_spec)
sys.modules["round_trips"] = _module
_spec.loader.exec_module(_module)
_counter = _module.RoundTripCounter()
_init = KazooClient.__init__

def _counted_init(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    _counter.install(self)

KazooClient.__init__ = _counted_init
atexit.register(lambda: open(os.environ["MIGRATOR_ROUND_TRIPS"], "w").write(json.dumps(_counter.counts())))
"""


def counting_env(tmp: Path) -> dict[str, str]:
    """Environment variables for `tests.helpers.cli.run`: the subprocess counts its round trips into
    `tmp/round_trips.json` (read it with `read_counts`)."""
    site = tmp / "count-round-trips"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE.format(helper=str(Path(__file__).resolve())))
    pythonpath = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": pythonpath, "MIGRATOR_ROUND_TRIPS": str(tmp / "round_trips.json")}


def read_counts(tmp: Path) -> dict[str, Any]:
    return json.loads((tmp / "round_trips.json").read_text())
