"""`KafkaClient(...).topics[name]`: the entry point an application written for pykafka starts from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from migrator.pykafka.exceptions import UnsupportedOption

if TYPE_CHECKING:
    from migrator.pykafka.consumer import BalancedConsumer

_CLIENT_REFUSED = {
    "use_greenlets": "not supported: migrator uses threads",
    "ssl_config": "pass the security settings as properties (kafka.security.protocol, kafka.ssl.*): docs/security.md",
    "source_address": "not supported",
}
_CLIENT_IGNORED = frozenset({"broker_version", "exclude_internal_topics"})
_CLIENT_PROPERTIES = {
    "socket_timeout_ms": "socket.timeout.ms",
    "offsets_channel_socket_timeout_ms": "offsets.channel.socket.timeout.ms",
}


@dataclass(frozen=True)
class Cluster:
    """Where the consumers of a client connect: Kafka's bootstrap servers, ZooKeeper, client-wide properties."""

    hosts: str
    zookeeper_hosts: str | None
    properties: Mapping[str, object]


class Topic:
    """pykafka's `Topic` as far as a consumer needs it: its `name` (bytes) and `get_balanced_consumer`."""

    def __init__(self, cluster: Cluster, name: str | bytes) -> None:
        self._cluster = cluster
        self.name = name.encode() if isinstance(name, str) else name

    def get_balanced_consumer(
        self, consumer_group: str | bytes, managed: bool = False, **kwargs: Any
    ) -> BalancedConsumer:
        """A `BalancedConsumer` of this topic; `managed=True` (Kafka's group coordinator) is refused: that is a
        Kafka consumer, not a ZooKeeper-coordinated member, and needs no bridge."""
        from migrator.pykafka.consumer import BalancedConsumer

        if managed:
            raise UnsupportedOption({"managed": "a managed consumer is a Kafka consumer; use pykafka itself"})
        if "zookeeper_connect" not in kwargs and self._cluster.zookeeper_hosts is not None:
            kwargs["zookeeper_connect"] = self._cluster.zookeeper_hosts
        return BalancedConsumer(self, self._cluster, consumer_group, **kwargs)

    def __repr__(self) -> str:
        return f"<migrator.pykafka.Topic {self.name!r}>"


class _Topics(dict[bytes, Topic]):
    """`client.topics[name]`: a topic object per name (str or bytes), made on first access."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__()
        self._cluster = cluster

    def __missing__(self, name: str | bytes) -> Topic:
        topic = Topic(self._cluster, name)
        self[topic.name] = topic
        return topic

    def __getitem__(self, name: str | bytes) -> Topic:
        return super().__getitem__(name.encode() if isinstance(name, str) else name)


class KafkaClient:
    """pykafka's `KafkaClient(hosts, zookeeper_hosts, ...)`. It connects to nothing itself: each consumer's
    connector does. `properties` (migrator only) go to every consumer it makes, e.g.
    `{"coordination.migration.enabled": "true"}` to make them bridges."""

    def __init__(
        self,
        hosts: str = "127.0.0.1:9092",
        zookeeper_hosts: str | None = None,
        properties: Mapping[str, object] | None = None,
        **kwargs: Any,
    ) -> None:
        unknown = sorted(set(kwargs) - set(_CLIENT_REFUSED) - _CLIENT_IGNORED - set(_CLIENT_PROPERTIES))
        if unknown:
            raise TypeError(f"KafkaClient() got unexpected keyword argument(s): {', '.join(unknown)}")
        refused = {k: why for k, why in _CLIENT_REFUSED.items() if kwargs.get(k)}
        if refused:
            raise UnsupportedOption(refused)
        mapped = {prop: kwargs[name] for name, prop in _CLIENT_PROPERTIES.items() if name in kwargs}
        self.cluster = Cluster(hosts, zookeeper_hosts, {**mapped, **(properties or {})})
        self.topics = _Topics(self.cluster)
