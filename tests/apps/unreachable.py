"""An app that logs at INFO (as many do) and starts a connector against a ZooKeeper nobody listens on.

    python tests/apps/unreachable.py ZOOKEEPER

Prints `error: <message>` and exits 1 with the connector's error.
"""

from __future__ import annotations

import logging
import sys

from migrator import ConsumerConnector, MigratorError


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        ConsumerConnector(
            {"zookeeper.connect": sys.argv[1], "group.id": "g", "zookeeper.connection.timeout.ms": "3000"}
        )
    except MigratorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
