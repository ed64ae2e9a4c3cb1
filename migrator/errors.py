"""Exceptions and the exit codes every command documents.

Exit codes: 0 done, 1 failed, 2 refused or bad usage (see docs/operations.md).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_REFUSED = 2


class MigratorError(Exception):
    """Base of every error this package raises on purpose; its message is one line for an operator."""

    exit_code = EXIT_FAILED


class ConfigError(MigratorError, ValueError):
    """A property is unknown or has a bad value; the message names the property and what is allowed
    (every problem found, and the file when the configuration came from one)."""

    exit_code = EXIT_REFUSED

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.problems: tuple[str, ...] = (message,)


class ListenerError(MigratorError):
    """The application's rebalance listener raised (the original exception is its `__cause__`). The
    connector has left the group (its partitions released for the other members) and every stream raises
    this error from then on; the application should `shutdown()`."""


class UsageError(MigratorError):
    """Bad input on the command line (a name, a value) detected before anything is written."""

    exit_code = EXIT_REFUSED


class RefusedError(MigratorError):
    """A preflight refused an unsafe action; nothing was written."""

    exit_code = EXIT_REFUSED


class EnvironmentProblem(MigratorError):
    """Something outside the project is missing or busy (java, mvn, a port); the message names the fix."""

    exit_code = EXIT_REFUSED


class CorruptNodeError(MigratorError):
    """A znode written by someone else does not decode; callers log, count and skip it."""
