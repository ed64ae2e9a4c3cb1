#!/usr/bin/env python3
"""`migrator fleet-scan` as a plain script, for `spark-submit` (which wants a file, not a console script).

    spark-submit --master spark://host:7077 scripts/fleet_scan.py --zookeeper 'zk1:2181;zk2:2181' ...

Under spark-submit the master comes from spark-submit; the migrator package is shipped to executors by
the job itself (they need kazoo and confluent-kafka installed). See docs/fleet.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from migrator.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["fleet-scan", *sys.argv[1:]]))
