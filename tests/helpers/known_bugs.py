"""Known product bugs that a test reproduces, in one place, so that each is named once and removed once.

A test marked with one of these still runs in CI and still reports what it found (XFAIL, or XPASS when the bug
did not show this time); it only does not fail the suite while the bug is open.
"""

from __future__ import annotations

import pytest

KNOWN_SEGV = pytest.mark.xfail(
    reason=(
        "known bug, issue 15 open: bridge processes can die of SIGSEGV while the brokers of a 3-broker cluster "
        "restart one by one (the group coordinator moves); see docs/drills.md, 'Known failures'"
    ),
    strict=False,
)
