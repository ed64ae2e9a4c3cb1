"""Topic filters of `create_message_streams_by_filter`, normalised exactly as the Scala `TopicFilter`
does before the regex is written into the `ids` node."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from migrator.errors import ConfigError
from migrator.protocol.codecs import PATTERN_BLACKLIST, PATTERN_WHITELIST

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def normalise_regex(raw: str) -> str:
    """Trim, `,` → `|`, drop spaces and surrounding quotes (CONTRACT §1)."""
    text = raw.strip().replace(",", "|").replace(" ", "")
    return text.strip("\"'")


@dataclass(frozen=True, slots=True)
class TopicFilter:
    raw: str
    regex: str = field(init=False)
    pattern: str = field(init=False, default=PATTERN_WHITELIST)

    def __post_init__(self) -> None:
        regex = normalise_regex(self.raw)
        if not regex:
            raise ConfigError("topic filter: the regex is empty")
        try:
            re.compile(regex)
        except re.error as exc:
            raise ConfigError(f"topic filter: {regex!r} is not a valid regex ({exc})") from exc
        object.__setattr__(self, "regex", regex)

    def matches(self, topic: str) -> bool:
        return re.fullmatch(self.regex, topic) is not None

    def is_allowed(self, topic: str, exclude_internal: bool = True) -> bool:
        if exclude_internal and topic in INTERNAL_TOPICS:
            return False
        return self.matches(topic)


class Whitelist(TopicFilter):
    """Topics whose whole name matches the regex."""


@dataclass(frozen=True, slots=True)
class Blacklist(TopicFilter):
    """Topics whose name does not match the regex."""

    pattern: str = field(init=False, default=PATTERN_BLACKLIST)

    def is_allowed(self, topic: str, exclude_internal: bool = True) -> bool:
        if exclude_internal and topic in INTERNAL_TOPICS:
            return False
        return not self.matches(topic)


def filter_from_registration(pattern: str, regex: str) -> TopicFilter:
    return Blacklist(regex) if pattern == PATTERN_BLACKLIST else Whitelist(regex)
