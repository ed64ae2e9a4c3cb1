"""Validation of group and topic names before they become znode path segments or Kafka names.

Kafka brokers accept only `[a-zA-Z0-9._-]`, at most 249 characters, and neither `.` nor `..`; the legacy
layout (CONTRACT §1) puts both names into ZooKeeper paths, so a `/` would silently create another layout.
Checking early turns a confusing broker or ZooKeeper error into one line naming the problem.
"""

from __future__ import annotations

import re

from migrator.errors import UsageError

MAX_NAME_LENGTH = 249
"""Kafka's limit (topic names; the same rule keeps group names safe as path segments and topic names)."""

LEGAL_CHARS = "a-zA-Z0-9._-"
_ILLEGAL = re.compile(f"[^{LEGAL_CHARS}]")


def _validate(kind: str, name: str) -> str:
    if not isinstance(name, str):
        raise UsageError(f"{kind} name must be a string, not {type(name).__name__}")
    if not name:
        raise UsageError(f"{kind} name is empty")
    if name in (".", ".."):
        raise UsageError(f"{kind} name {name!r} is not allowed ('.' and '..' are reserved)")
    if len(name) > MAX_NAME_LENGTH:
        raise UsageError(f"{kind} name is {len(name)} characters long; the maximum is {MAX_NAME_LENGTH}")
    bad = _ILLEGAL.search(name)
    if bad is not None:
        raise UsageError(
            f"{kind} name {name!r} contains illegal character {bad.group()!r}; "
            "allowed are ASCII letters, digits, '.', '_' and '-'"
        )
    return name


def validate_group(name: str) -> str:
    """Return `name` unchanged if it is a legal consumer group name, else raise `UsageError`."""
    return _validate("group", name)


def validate_topic(name: str) -> str:
    """Return `name` unchanged if it is a legal topic name, else raise `UsageError`."""
    return _validate("topic", name)
