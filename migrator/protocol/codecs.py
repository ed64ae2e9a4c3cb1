"""Byte-exact codecs for the znodes of CONTRACT §1 and the migration extension.

Encoders produce what the Scala `ZookeeperConsumerConnector` writes (compact JSON, keys in its order).
Decoders are strict: data written by a foreign process that does not fit raises `CorruptNodeError`,
so that a rebalance never starts from a guess.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from migrator.errors import CorruptNodeError
from migrator.protocol.fetch import FetchHealth, FetchState
from migrator.protocol.kafka import RebalanceProtocol
from migrator.protocol.partition import TopicPartition

PATTERN_STATIC = "static"
PATTERN_WHITELIST = "white_list"
PATTERN_BLACKLIST = "black_list"
PATTERNS = (PATTERN_STATIC, PATTERN_WHITELIST, PATTERN_BLACKLIST)


def _compact(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True, slots=True)
class Registration:
    """The data of `/consumers/<group>/ids/<consumerId>` (and of `migration/ids/<consumerId>`).

    `subscription` maps a topic (static) or a normalised regex (wildcard) to its stream count.
    """

    subscription: Mapping[str, int]
    pattern: str = PATTERN_STATIC
    timestamp_ms: int = 0
    version: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "subscription", MappingProxyType(dict(self.subscription)))

    @property
    def is_wildcard(self) -> bool:
        return self.pattern != PATTERN_STATIC

    def encode(self) -> bytes:
        return _compact(
            {
                "version": self.version,
                "subscription": dict(self.subscription),
                "pattern": self.pattern,
                "timestamp": str(self.timestamp_ms),
            }
        )

    @classmethod
    def decode(cls, data: bytes | None) -> Registration:
        obj = _json_object(data, "ids")
        version = obj.get("version")
        subscription = obj.get("subscription")
        pattern = obj.get("pattern")
        timestamp = obj.get("timestamp", "0")
        if version != 1:
            raise CorruptNodeError(f"unsupported registration version {version!r}")
        if pattern not in PATTERNS:
            raise CorruptNodeError(f"unknown registration pattern {pattern!r}")
        if not isinstance(subscription, dict) or not subscription:
            raise CorruptNodeError("registration subscription must be a non-empty object")
        counts: dict[str, int] = {}
        for topic, count in subscription.items():
            if not isinstance(topic, str) or not topic:
                raise CorruptNodeError("registration subscription has an empty topic")
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise CorruptNodeError(f"registration stream count for {topic!r} is not a positive number")
            counts[topic] = count
        if pattern != PATTERN_STATIC and len(counts) != 1:
            raise CorruptNodeError("a wildcard registration must have exactly one subscription entry")
        try:
            ts = int(str(timestamp))
        except ValueError as exc:
            raise CorruptNodeError(f"registration timestamp {timestamp!r} is not a number") from exc
        return cls(subscription=counts, pattern=pattern, timestamp_ms=ts, version=1)


def _json_object(data: bytes | None, what: str) -> dict[str, Any]:
    if not data:
        raise CorruptNodeError(f"empty {what} node")
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptNodeError(f"{what} node is not JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise CorruptNodeError(f"{what} node is not a JSON object")
    return obj


def encode_owner(thread_id: str) -> bytes:
    return thread_id.encode("utf-8")


def decode_owner(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def encode_offset(next_offset: int) -> bytes:
    if next_offset < 0:
        raise ValueError(f"offset must be >= 0, got {next_offset}")
    return str(next_offset).encode("ascii")


def decode_offset(data: bytes | None) -> int:
    """The next offset to read; raises CorruptNodeError on anything but a non-negative decimal."""
    text = (data or b"").decode("utf-8", errors="replace").strip()
    if not (text.isascii() and text.isdigit()):  # int() refuses digits like "¹"
        raise CorruptNodeError(f"offset node holds {text!r}, not a decimal")
    return int(text)


class Mode(StrEnum):
    """The values of `migration/mode` an operator may write."""

    KAFKA = "kafka"
    ZOOKEEPER = "zookeeper"


@dataclass(frozen=True, slots=True)
class ModeNode:
    """What `migration/mode` holds right now: absent, a known mode, or an unknown value (kept raw)."""

    exists: bool
    raw: str | None = None

    @property
    def mode(self) -> Mode | None:
        """The mode when the node holds exactly a known value; None when absent or unknown."""
        if not self.exists or self.raw is None:
            return None
        try:
            return Mode(self.raw)
        except ValueError:
            return None

    @property
    def is_unknown(self) -> bool:
        return self.exists and self.mode is None

    @classmethod
    def absent(cls) -> ModeNode:
        return cls(exists=False)

    @classmethod
    def decode(cls, data: bytes | None) -> ModeNode:
        return cls(exists=True, raw=(data or b"").decode("utf-8", errors="replace"))


class Authority(StrEnum):
    ZOOKEEPER = "zookeeper"
    KAFKA = "kafka"


_AUTHORITY_OF_MODE = {Mode.KAFKA: Authority.KAFKA, Mode.ZOOKEEPER: Authority.ZOOKEEPER}


def authority_of(mode: Mode) -> Authority:
    """The authority a bridge takes when the mode node says `mode`."""
    return _AUTHORITY_OF_MODE[mode]


def follows_mode(authority: Authority, mode: Mode) -> bool:
    """Whether a bridge holding `authority` has followed the mode node's `mode`: the one comparison of the two."""
    return authority is authority_of(mode)


@dataclass(frozen=True, slots=True)
class PublishedAuthority:
    """What a bridge publishes at `migration/authority/<consumerId>` after each rebalance.

    `generation` grows by one per publication (a rebalance that changed something, a mode write, a start);
    `kafka_member_id` is its embedded member's id in the Kafka group (empty when not joined);
    `partitions` is how many partitions it owns after that rebalance; `held` is true while the bridge holds
    nothing because falling back to ZooKeeper would overlap plain Kafka consumers (then `authority` is
    `zookeeper`, the rule's word, and `reason` says why). Readers that predate `held` ignore it.
    `bootstrap` is the Kafka cluster its embedded member joins, so that operator commands without
    `--bootstrap-servers` can find the group's brokers where `/brokers/ids` has none (a KRaft cluster).
    `fetch` says which owned partitions its fetcher keeps failing to read, and why (written only when some
    do: a healthy bridge's node is unchanged). `protocol` is the rebalance protocol its embedded member
    runs (`Group.protocol_disagreement` compares it with the Kafka group's); absent in older nodes.
    """

    authority: Authority
    generation: int
    timestamp_ms: int
    reason: str = ""
    kafka_member_id: str = ""
    partitions: int = 0
    held: bool = False
    bootstrap: str = ""
    fetch: FetchState = field(default_factory=FetchState)
    protocol: RebalanceProtocol | None = None

    def encode(self) -> bytes:
        return _compact(
            {
                "version": 1,
                "authority": self.authority.value,
                "generation": self.generation,
                "timestamp": self.timestamp_ms,
                "reason": self.reason,
                "kafka_member_id": self.kafka_member_id,
                "partitions": self.partitions,
                "held": self.held,
                **({"bootstrap": self.bootstrap} if self.bootstrap else {}),
                **({"fetch": _fetch_doc(self.fetch)} if self.fetch.health is not FetchHealth.OK else {}),
                **({"protocol": self.protocol.value} if self.protocol is not None else {}),
            }
        )

    @classmethod
    def decode(cls, data: bytes | None) -> PublishedAuthority:
        obj = _json_object(data, "authority")
        try:
            return cls(
                authority=Authority(obj["authority"]),
                generation=int(obj["generation"]),
                timestamp_ms=int(obj["timestamp"]),
                reason=str(obj.get("reason", "")),
                kafka_member_id=str(obj.get("kafka_member_id", "")),
                partitions=int(obj.get("partitions", 0)),
                held=obj.get("held", False) is True,
                bootstrap=str(obj.get("bootstrap", "")),
                fetch=_fetch_state(obj.get("fetch")),
                protocol=_protocol(obj.get("protocol")),
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise CorruptNodeError(f"authority node is malformed: {exc}") from exc


def _protocol(value: object) -> RebalanceProtocol | None:
    """A protocol this version does not know reads as unknown (None), like an older node without one."""
    return next((p for p in RebalanceProtocol if p.value == value), None)


def _fetch_doc(state: FetchState) -> dict[str, object]:
    return {"health": state.health.value, "partitions": [[tp.topic, tp.partition] for tp in state.partitions]}


def _fetch_state(doc: object) -> FetchState:
    if doc is None:
        return FetchState()
    if not isinstance(doc, dict):
        raise TypeError(f"fetch is not an object: {doc!r}")
    partitions = tuple(TopicPartition(str(t), int(p)) for t, p in doc.get("partitions", ()))
    return FetchState(FetchHealth(doc["health"]), partitions)


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One set-mode in the audit trail under `migration/audit` (sequential nodes)."""

    timestamp_ms: int
    who: str
    from_mode: str | None
    to_mode: str
    reason: str
    forced: bool = False

    def encode(self) -> bytes:
        return _compact(
            {
                "version": 1,
                "timestamp": self.timestamp_ms,
                "who": self.who,
                "from": self.from_mode,
                "to": self.to_mode,
                "reason": self.reason,
                "forced": self.forced,
            }
        )

    @classmethod
    def decode(cls, data: bytes | None) -> AuditEntry:
        obj = _json_object(data, "audit")
        try:
            return cls(
                timestamp_ms=int(obj["timestamp"]),
                who=str(obj["who"]),
                from_mode=obj.get("from"),
                to_mode=str(obj["to"]),
                reason=str(obj.get("reason", "")),
                forced=bool(obj.get("forced", False)),
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise CorruptNodeError(f"audit node is malformed: {exc}") from exc


def decode_broker_topic(data: bytes | None) -> dict[int, list[int]]:
    """Partition → replicas from `/brokers/topics/<topic>` as a ZooKeeper-mode broker writes it."""
    obj = _json_object(data, "topic")
    parts = obj.get("partitions")
    if not isinstance(parts, dict):
        raise CorruptNodeError("topic node has no partitions object")
    try:
        return {int(p): [int(r) for r in replicas] for p, replicas in parts.items()}
    except (ValueError, TypeError) as exc:
        raise CorruptNodeError(f"topic node partitions are malformed: {exc}") from exc


@dataclass(frozen=True)
class BrokerEndpoint:
    """One listener of a broker as `/brokers/ids/<id>` registers it; `protocol` is its security protocol
    (`listener_security_protocol_map` maps a named listener such as `INTERNAL` to one)."""

    protocol: str
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def decode_broker_endpoints(data: bytes | None) -> tuple[BrokerEndpoint, ...]:
    """Every endpoint of `/brokers/ids/<id>`, in registration order (a pre-listener broker's host/port as
    PLAINTEXT)."""
    obj = _json_object(data, "broker")
    protocols = obj.get("listener_security_protocol_map")
    protocols = protocols if isinstance(protocols, dict) else {}
    found = []
    for endpoint in obj.get("endpoints", []):
        listener, _, hostport = str(endpoint).partition("://")
        host, _, port = hostport.rpartition(":")
        if host and port.isdigit():
            protocol = str(protocols.get(listener, listener)).upper()
            found.append(BrokerEndpoint(protocol, host.strip("[]"), int(port)))
    legacy_host, legacy_port = obj.get("host"), obj.get("port")  # before listeners/endpoints existed
    if not found and isinstance(legacy_host, str) and isinstance(legacy_port, int):
        found.append(BrokerEndpoint("PLAINTEXT", legacy_host, legacy_port))
    if not found:
        raise CorruptNodeError("broker node has no endpoint")
    return tuple(found)


def decode_broker(data: bytes | None) -> tuple[str, int]:
    """(host, port) of the first endpoint of `/brokers/ids/<id>`."""
    first = decode_broker_endpoints(data)[0]
    return first.host, first.port
