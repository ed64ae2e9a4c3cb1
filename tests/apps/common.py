"""What the apps of tests/apps/ share, written like them only against the public API: the command line
each one takes (`ZOOKEEPER GROUP TOPIC CONSUMER_ID LOG`), the properties they all set, a stop on SIGTERM,
and one thread per stream. An app imports it as a sibling (`from common import ...`): it runs as a script."""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Callable, Sequence

from migrator import KafkaStream


def app_parser() -> argparse.ArgumentParser:
    """The parser of every app's positional arguments; the app adds its own options."""
    p = argparse.ArgumentParser()
    for name in ("zookeeper", "group", "topic", "consumer_id", "log"):
        p.add_argument(name)
    return p


def app_props(args: argparse.Namespace) -> dict[str, str]:
    """The member's properties every app sets: its group and id from the command line, reading from the
    start, and a 6 s session; an app adds its own."""
    return {
        "zookeeper.connect": args.zookeeper,
        "group.id": args.group,
        "consumer.id": args.consumer_id,
        "auto.offset.reset": "smallest",
        "zookeeper.session.timeout.ms": "6000",
    }


def stop_on_sigterm() -> threading.Event:
    """An event set by SIGTERM, which the app's threads watch to leave their loops."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    return stop


def serve(streams: Sequence[KafkaStream], work: Callable[[KafkaStream], None], stop: threading.Event) -> None:
    """Run `work` on each stream in a thread of its own, print `ready`, and return once `stop` is set and
    every thread has left its loop."""
    threads = [threading.Thread(target=work, args=(s,)) for s in streams]
    for t in threads:
        t.start()
    print("ready", flush=True)
    stop.wait()
    for t in threads:
        t.join()
