"""Exceptions and the exit codes every command documents: the one place they are defined.

docs/operations.md lists which command can end with which code; `EXIT_CODES` is the whole set, which the
property test of the command line checks every run against.
"""

from __future__ import annotations

EXIT_OK = 0
"""Done (a dry run that found nothing unsafe counts as done)."""
EXIT_FAILED = 1
"""Failed: ZooKeeper or Kafka unreachable, a `--wait` that timed out, a demo verdict that failed."""
EXIT_REFUSED = 2
"""Refused or bad usage: nothing was written."""
EXIT_NOT_FOUND = 3
"""What the command names does not exist: the chroot, `/consumers` under it, or the group. Nothing written."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (SIGINT), as a shell reports it."""
EXIT_CODES = frozenset({EXIT_OK, EXIT_FAILED, EXIT_REFUSED, EXIT_NOT_FOUND, EXIT_INTERRUPTED})


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


class NotAuthorised(RefusedError):
    """ZooKeeper refused a write (NoAuth). Who we were decides the advice, so it is a field, not text."""

    def __init__(self, path: str | None, identity: str | None) -> None:
        self.path, self.identity = path, identity
        what = f"write {path}" if path else "do this"
        if identity is None:
            advice = "run with --zk-auth digest:<admin user>:<password> (the identity `acl protect` named)"
        else:
            advice = f"connected as {identity}, which is not the identity `acl protect` named, or its password is wrong"
        super().__init__(f"not authorised by ZooKeeper to {what}: {advice}; nothing was written")


class NotFound(MigratorError):
    """The chroot, `/consumers` under it, or the group does not exist (a typo, the wrong cluster)."""

    exit_code = EXIT_NOT_FOUND


class Interrupted(MigratorError):
    """Ctrl-C after something was written: the message says what is now in place and how to undo it."""

    exit_code = EXIT_INTERRUPTED


class EnvironmentProblem(MigratorError):
    """Something outside the project is missing or busy (java, mvn, a port); the message names the fix."""

    exit_code = EXIT_REFUSED


class CorruptNodeError(MigratorError):
    """A znode written by someone else does not decode; callers log, count and skip it."""
