"""What the drop-in API raises beyond migrator's own errors (`migrator.errors`)."""

from __future__ import annotations

from migrator.errors import ConfigError, MigratorError


class UnsupportedOption(ConfigError):
    """A pykafka argument (or call) that a migrator connector cannot honour; nothing was connected or written.

    `options` names the refused arguments, `problems` says for each why and what to do instead (the message
    joins them), so a program can tell them apart without reading the text."""

    def __init__(self, refused: dict[str, str]) -> None:
        super().__init__("; ".join(f"{name}: {why}" for name, why in refused.items()))
        self.options: tuple[str, ...] = tuple(refused)
        self.problems = tuple(f"{name}: {why}" for name, why in refused.items())


class ConsumerStoppedException(MigratorError):
    """`consume()` on a consumer that was stopped (pykafka's exception of the same name)."""
