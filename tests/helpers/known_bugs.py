"""Known product bugs that a test reproduces, in one place, so that each is named once and removed once.

A test marked with one of these still runs in CI and still reports what it found (XFAIL, or XPASS when the bug
did not show this time); it only does not fail the suite while the bug is open.
"""

from __future__ import annotations

import pytest

KNOWN_SOAK_DUPLICATES = pytest.mark.xfail(
    reason=(
        "known bug, issue 15 open: after the SIGSEGV and connection-storm fixes, the 3-minute soak still saw records "
        "processed twice by one member, without a crash, and a broker that failed to restart; see docs/drills.md, "
        "'Known failures'"
    ),
    strict=False,
)
