"""The authority rule of CONTRACT §5, a pure function.

`kafka` only if the mode node holds exactly `kafka`, every registered member is a bridge, and Kafka
coordination is healthy: this bridge's embedded member is in the group's current generation and so is
every other bridge's (a bridge missing from the Kafka group, e.g. refused with GROUP_MAX_SIZE_REACHED,
would otherwise obey ZooKeeper while the rest obey Kafka). Anything else means `zookeeper`.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

from migrator.zk.codecs import Authority, Mode, ModeNode


@dataclass(frozen=True, slots=True)
class KafkaHealth:
    joined: bool
    reason: str = ""
    missing_bridges: frozenset[str] = frozenset()

    @property
    def healthy(self) -> bool:
        return self.joined and not self.missing_bridges


UNKNOWN_KAFKA = KafkaHealth(joined=False, reason="embedded member has not joined the Kafka group")


@dataclass(frozen=True, slots=True)
class AuthorityDecision:
    authority: Authority
    reason: str
    unknown_mode_value: str | None = None


def decide_authority(
    mode: ModeNode, members: Set[str], bridges: Set[str], kafka: KafkaHealth
) -> AuthorityDecision:
    if not mode.exists:
        return AuthorityDecision(Authority.ZOOKEEPER, "no mode node")
    if mode.is_unknown:
        return AuthorityDecision(Authority.ZOOKEEPER, f"unknown mode value {mode.raw!r}", mode.raw)
    if mode.mode is Mode.ZOOKEEPER:
        return AuthorityDecision(Authority.ZOOKEEPER, "mode is zookeeper")
    legacy = sorted(set(members) - set(bridges))
    if legacy:
        return AuthorityDecision(Authority.ZOOKEEPER, f"legacy connector registered: {legacy[0]}")
    if not kafka.joined:
        return AuthorityDecision(Authority.ZOOKEEPER, f"Kafka coordination unavailable: {kafka.reason}")
    if kafka.missing_bridges:
        missing = sorted(kafka.missing_bridges)[0]
        return AuthorityDecision(Authority.ZOOKEEPER, f"bridge {missing} is not in the Kafka group")
    return AuthorityDecision(Authority.KAFKA, "mode is kafka and every member is a bridge in the Kafka group")


def needs_group_check(mode: ModeNode, members: Set[str], bridges: Set[str]) -> bool:
    """Whether the Kafka group must be described at all (only when every other condition says kafka)."""
    return mode.mode is Mode.KAFKA and set(members) <= set(bridges)
