"""pykafka's `BalancedConsumer` arguments -> the properties of a migrator connector (pure: no I/O).

`consumer_properties` is the whole mapping: every argument pykafka 2.8.0 takes is either translated to the
property of the same meaning, accepted without effect (a tuning knob librdkafka manages itself), or refused
with the reason, all refusals in one `UnsupportedOption`. The defaults are pykafka's, not migrator's
(`auto_commit_enable=False`, `auto_offset_reset=EARLIEST`), so a program keeps the behaviour it had.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from migrator.pykafka.common import OffsetType
from migrator.pykafka.exceptions import UnsupportedOption

DEFAULTS: dict[str, Any] = {
    "fetch_message_max_bytes": 1024 * 1024,
    "num_consumer_fetchers": 1,
    "auto_commit_enable": False,
    "auto_commit_interval_ms": 60 * 1000,
    "queued_max_messages": 2000,
    "fetch_min_bytes": 1,
    "fetch_error_backoff_ms": 500,
    "fetch_wait_max_ms": 100,
    "offsets_channel_backoff_ms": 1000,
    "offsets_commit_max_retries": 5,
    "auto_offset_reset": OffsetType.EARLIEST,
    "consumer_timeout_ms": -1,
    "rebalance_max_retries": 5,
    "rebalance_backoff_ms": 2 * 1000,
    "zookeeper_connection_timeout_ms": 6 * 1000,
    "zookeeper_connect": None,
    "zookeeper_hosts": "127.0.0.1:2181",
    "zookeeper": None,
    "auto_start": True,
    "reset_offset_on_start": False,
    "post_rebalance_callback": None,
    "use_rdkafka": False,
    "compacted_topic": False,
    "membership_protocol": None,  # pykafka's RangeProtocol
    "deserializer": None,
    "reset_offset_on_fetch": True,
}
"""Every keyword argument of pykafka 2.8.0's `BalancedConsumer`, with pykafka's default."""

_PROPERTIES: dict[str, str] = {
    "fetch_message_max_bytes": "fetch.message.max.bytes",
    "num_consumer_fetchers": "num.consumer.fetchers",
    "auto_commit_interval_ms": "auto.commit.interval.ms",
    "fetch_min_bytes": "fetch.min.bytes",
    "fetch_wait_max_ms": "fetch.wait.max.ms",
    "offsets_channel_backoff_ms": "offsets.channel.backoff.ms",
    "offsets_commit_max_retries": "offsets.commit.max.retries",
    "rebalance_max_retries": "rebalance.max.retries",
    "rebalance_backoff_ms": "rebalance.backoff.ms",
    "zookeeper_connection_timeout_ms": "zookeeper.connection.timeout.ms",
}
"""Arguments whose value passes unchanged to the property of the same meaning."""

IGNORED = frozenset({"queued_max_messages", "fetch_error_backoff_ms", "compacted_topic"})
"""Accepted with any value and without effect: librdkafka sizes its queue and backs off by itself, and it
reads compacted topics (offset gaps) as any other."""

_REFUSED: dict[str, tuple[Callable[[Any], bool], str]] = {
    "use_rdkafka": (bool, "migrator fetches with librdkafka already; drop the argument"),
    "zookeeper": (
        lambda v: v is not None,
        "a connector opens its own ZooKeeper session; pass zookeeper_connect instead of a KazooClient",
    ),
    "reset_offset_on_start": (bool, "not supported: a migrator member resumes from the group's committed offsets"),
    "post_rebalance_callback": (
        lambda v: v is not None,
        "not supported: a rebalance cannot reset offsets; see ConsumerConnector.set_rebalance_listener",
    ),
    "reset_offset_on_fetch": (lambda v: not v, "not supported: an out-of-range offset is reset by auto_offset_reset"),
}
"""Arguments refused when they ask for something other than pykafka's default, with the reason."""

_OFFSET_RESET = {OffsetType.EARLIEST: "smallest", OffsetType.LATEST: "largest"}
_PROTOCOLS = {b"range": "range", b"roundrobin": "roundrobin"}


@dataclass(frozen=True)
class ConsumerOptions:
    """What a `BalancedConsumer` facade needs: the connector's properties and the parts it handles itself."""

    properties: dict[str, object]
    topic: str
    consumer_timeout_ms: int
    auto_start: bool
    deserializer: Callable[[bytes | None, bytes | None], tuple[Any, Any]] | None


def consumer_properties(
    topic: str | bytes,
    consumer_group: str | bytes,
    kwargs: Mapping[str, Any],
    bootstrap: str | None = None,
    extra: Mapping[str, object] | None = None,
) -> ConsumerOptions:
    """The connector of one `BalancedConsumer(topic, cluster, consumer_group, **kwargs)` call.

    `extra` holds migrator-only properties (e.g. `coordination.migration.enabled`); one that a pykafka
    argument already decides is refused rather than silently overriding it. Raises `TypeError` for an
    argument pykafka does not have either (as calling pykafka would), `UnsupportedOption` for the rest.
    """
    unknown = sorted(set(kwargs) - set(DEFAULTS))
    if unknown:
        raise TypeError(f"BalancedConsumer() got unexpected keyword argument(s): {', '.join(unknown)}")
    args = {**DEFAULTS, **kwargs}
    refused = {name: why for name, (asks, why) in _REFUSED.items() if asks(args[name])}
    props: dict[str, object] = {
        "group.id": _text(consumer_group),
        "zookeeper.connect": args["zookeeper_connect"] or args["zookeeper_hosts"],
        "zookeeper.layout": "pykafka",
        "auto.commit.enable": "true" if args["auto_commit_enable"] else "false",
        **{prop: args[name] for name, prop in _PROPERTIES.items()},
    }
    if bootstrap:
        props["kafka.bootstrap.servers"] = bootstrap
    reset = _OFFSET_RESET.get(args["auto_offset_reset"])
    if reset is None:
        refused["auto_offset_reset"] = "only OffsetType.EARLIEST or OffsetType.LATEST (no timestamp or offset)"
    else:
        props["auto.offset.reset"] = reset
    strategy = _strategy(args["membership_protocol"])
    if strategy is None:
        refused["membership_protocol"] = "only pykafka's RangeProtocol or RoundRobinProtocol"
    else:
        props["partition.assignment.strategy"] = strategy
    for name in sorted(set(extra or ()) & set(props)):
        refused[f"properties[{name!r}]"] = "decided by a pykafka argument; set it there"
    if refused:
        raise UnsupportedOption(refused)
    return ConsumerOptions(
        properties={**props, **(extra or {})},
        topic=_text(topic),
        consumer_timeout_ms=int(args["consumer_timeout_ms"]),
        auto_start=bool(args["auto_start"]),
        deserializer=args["deserializer"],
    )


def _strategy(protocol: object) -> str | None:
    """`range` or `roundrobin` for pykafka's protocols (ours or pykafka's own namedtuples), else None."""
    if protocol is None:
        return "range"
    return _PROTOCOLS.get(getattr(protocol, "protocol_name", None))  # type: ignore[arg-type]


def _text(name: str | bytes) -> str:
    return name.decode() if isinstance(name, bytes) else name
