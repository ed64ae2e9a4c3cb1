"""Validation of group and topic names before they become znode path segments or Kafka names.

Topics follow the brokers' rule: only `[a-zA-Z0-9._-]`, at most 249 characters, neither `.` nor `..`.
A group id (and a client.id, which a bridge's consumerId is built from) may be anything that is both a
legal Kafka group id (any string) and a legal ZooKeeper node name (CONTRACT §1 puts it into the path):
not empty, not `.` or `..`, no `/`, and none of the characters ZooKeeper's path check refuses (controls
U+0000-U+001F and U+007F-U+009F, U+D800-U+F8FF, U+FFF0-U+FFFF). So `team:orders`, `ops@eu` and
`my group` are accepted, as the Kafka tools and legacy clients created them. Checking early turns a
confusing broker or ZooKeeper error into one line naming the problem.
"""

from __future__ import annotations

import re

from migrator.errors import UsageError

MAX_NAME_LENGTH = 249
"""Kafka's limit for topic names."""

LEGAL_CHARS = "a-zA-Z0-9._-"
_ILLEGAL_TOPIC = re.compile(f"[^{LEGAL_CHARS}]")
_ILLEGAL_IN_ZNODE = re.compile("[/\u0000-\u001f\u007f-\u009f\ud800-\uf8ff\ufff0-\uffff]")
"""`/` separates path segments; the rest is what ZooKeeper's PathUtils.validatePath refuses."""


def _common(kind: str, name: str) -> None:
    if not isinstance(name, str):
        raise UsageError(f"{kind} name must be a string, not {type(name).__name__}")
    if not name:
        raise UsageError(f"{kind} name is empty")
    if name in (".", ".."):
        raise UsageError(f"{kind} name {name!r} is not allowed ('.' and '..' are reserved)")


def validate_group(name: str, kind: str = "group") -> str:
    """Return `name` unchanged if it is a legal consumer group id (also a legal znode name), else raise
    `UsageError`."""
    _common(kind, name)
    bad = _ILLEGAL_IN_ZNODE.search(name)
    if bad is not None:
        raise UsageError(
            f"{kind} name {name!r} contains illegal character {bad.group()!r}: a ZooKeeper node name cannot hold "
            "'/' or control characters"
        )
    return name


def validate_topic(name: str) -> str:
    """Return `name` unchanged if it is a legal topic name, else raise `UsageError`."""
    _common("topic", name)
    if len(name) > MAX_NAME_LENGTH:
        raise UsageError(f"topic name is {len(name)} characters long; the maximum is {MAX_NAME_LENGTH}")
    bad = _ILLEGAL_TOPIC.search(name)
    if bad is not None:
        raise UsageError(
            f"topic name {name!r} contains illegal character {bad.group()!r}; "
            "allowed are ASCII letters, digits, '.', '_' and '-'"
        )
    return name
