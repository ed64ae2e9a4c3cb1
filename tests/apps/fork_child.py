"""A member that forks a child while consuming: the child tries the inherited connector (shutdown, commit,
iterating its stream) and reports what each did; the parent goes on and stops on SIGTERM.

    python tests/apps/fork_child.py ZOOKEEPER GROUP TOPIC CONSUMER_ID LOG

Prints `ready`, then the child's `child <call> <exception name> <seconds>` lines, then `forked <exit code>`,
and `stopped` at the end. Each record the parent processes is logged (JSONL).
"""

from __future__ import annotations

import os
import sys
import threading
import time

from common import app_parser, app_props, stop_on_sigterm

from migrator import ConsumerConnector
from migrator.observe import ProcessingLog


def try_in_child(name: str, call: object) -> None:
    started = time.monotonic()
    try:
        call()  # type: ignore[operator]
        outcome = "returned"
    except Exception as exc:
        outcome = type(exc).__name__
    print(f"child {name} {outcome} {time.monotonic() - started:.3f}", flush=True)


def main() -> None:
    args = app_parser().parse_args()
    stop = stop_on_sigterm()
    log = ProcessingLog(args.log)
    connector = ConsumerConnector(app_props(args))
    member = f"{connector.consumer_id}@{os.getpid()}"
    stream = connector.create_message_streams({args.topic: 1})[args.topic][0]
    first = threading.Event()

    def work() -> None:
        for m in stream:
            with log.processing(member, m.thread_id, m.topic, m.partition, m.offset):
                first.set()

    thread = threading.Thread(target=work)
    thread.start()
    print("ready", flush=True)
    first.wait(60)
    pid = os.fork()
    if pid == 0:
        try_in_child("shutdown", connector.shutdown)
        try_in_child("commit", connector.commit_offsets)
        try_in_child("iterate", lambda: next(iter(stream)))
        sys.stdout.flush()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print(f"forked {os.waitstatus_to_exitcode(status)}", flush=True)
    stop.wait()
    connector.shutdown()
    thread.join()
    log.close()
    print("stopped", flush=True)


if __name__ == "__main__":
    main()
