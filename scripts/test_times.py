#!/usr/bin/env python3
"""The test files that took longest, from pytest's JUnit XML (`-o junit_family=xunit1`, which names each test's
file): per file, the sum of its tests' setup, call and teardown, and how many tests it has.

    python scripts/test_times.py out/junit.xml [--top 15]

scripts/test prints it after a whole-suite run, so that CI's log shows where the wall time goes per file (what
`--dist loadfile` hands to a worker as one piece), not only per test.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path


def file_times(report: Path) -> tuple[Counter[str], Counter[str]]:
    """file -> seconds, file -> tests; a test without a `file` attribute counts under its classname."""
    seconds: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    for case in ET.parse(report).getroot().iter("testcase"):
        name = case.get("file") or case.get("classname") or "?"
        seconds[name] += float(case.get("time") or 0.0)
        tests[name] += 1
    return seconds, tests


def table(seconds: Counter[str], tests: Counter[str], top: int) -> list[str]:
    total = sum(seconds.values())
    lines = [f"slowest {top} files of {len(seconds)} ({total:.0f} s of test time in all):"]
    for name, took in seconds.most_common(top):
        lines.append(f"{took:8.1f}s {100 * took / total if total else 0:5.1f}% {tests[name]:4d} tests  {name}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", type=Path, help="pytest's --junitxml file")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    try:
        seconds, tests = file_times(args.report)
    except (OSError, ET.ParseError) as err:
        print(f"error: cannot read {args.report}: {err}", file=sys.stderr)
        return 2
    print("\n".join(table(seconds, tests, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
