#!/usr/bin/env python3
"""Write N synthetic consumer groups to a ZooKeeper and hold them (their members are ephemeral nodes of
this process's session) until Ctrl-C/SIGTERM, --hold-for, or (--stop-on-eof) the end of stdin seconds; then remove them.

    python scripts/make_fleet.py --zookeeper 127.0.0.1:2181 --groups 10000 --prefix bench
    python scripts/make_fleet.py --zookeeper 127.0.0.1:2181 --prefix bench --clean
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import contextlib

import migrator.ops  # noqa: F401  (kazoo compatibility shim)
from migrator.fleet import synthetic
from migrator.zk.client import connect


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zookeeper", "-z", required=True)
    parser.add_argument("--groups", "-n", type=int, default=1000)
    parser.add_argument("--prefix", default="fleet")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hold-for", type=float, help="seconds to hold the session (default: until stopped)")
    parser.add_argument("--stop-on-eof", action="store_true", help="stop when stdin closes (for a parent process)")
    parser.add_argument("--keep", action="store_true", help="leave the persistent nodes behind when stopping")
    parser.add_argument("--clean", action="store_true", help="only remove groups named <prefix>-*")
    args = parser.parse_args(argv)
    zk = connect(args.zookeeper)
    try:
        if args.clean:
            print(f"removed {synthetic.remove_fleet(zk, args.prefix)} groups", file=sys.stderr)
            return 0
        started = time.monotonic()
        fleet = synthetic.make_fleet(
            zk, args.groups, prefix=args.prefix, seed=args.seed, now_ms=int(time.time() * 1000)
        )
        took = time.monotonic() - started
        print(
            f"wrote {len(fleet.shapes)} groups in {took:.1f}s ({len(fleet.shapes) / took:.0f} groups/s)",
            file=sys.stderr,
        )
        print("READY", flush=True)  # for a parent process waiting on our stdout
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        if args.stop_on_eof:
            threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait(args.hold_for)
        if not args.keep:
            synthetic.remove_groups(zk, fleet.shapes)
        return 0
    finally:
        zk.stop()
        zk.close()


if __name__ == "__main__":
    sys.exit(main())
