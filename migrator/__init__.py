"""migrator: move Kafka consumer groups between ZooKeeper and Kafka coordination (KIP-125).

The public names below load on first use (PEP 562): `import migrator.assign.model`, or any other module of
the pure core, must not pull in the connector and with it kazoo, confluent_kafka and prometheus_client.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from migrator.config import ConsumerConfig
    from migrator.connector import ConsumerConnector
    from migrator.consumer.aio import AsyncRecords
    from migrator.consumer.fork import UsedAfterFork
    from migrator.consumer.listener import ConsumerRebalanceListener
    from migrator.consumer.stream import ConsumerTimeout, KafkaStream
    from migrator.errors import ConfigError, ListenerError, MigratorError
    from migrator.protocol.filters import Blacklist, Whitelist
    from migrator.protocol.message import Message

_HOMES = {
    "AsyncRecords": "migrator.consumer.aio",
    "Blacklist": "migrator.protocol.filters",
    "ConfigError": "migrator.errors",
    "ConsumerConfig": "migrator.config",
    "ConsumerConnector": "migrator.connector",
    "ConsumerRebalanceListener": "migrator.consumer.listener",
    "ConsumerTimeout": "migrator.consumer.stream",
    "KafkaStream": "migrator.consumer.stream",
    "ListenerError": "migrator.errors",
    "Message": "migrator.protocol.message",
    "MigratorError": "migrator.errors",
    "UsedAfterFork": "migrator.consumer.fork",
    "Whitelist": "migrator.protocol.filters",
}
"""Each public name and the module that defines it."""

__all__ = [
    "AsyncRecords",
    "Blacklist",
    "ConfigError",
    "ConsumerConfig",
    "ConsumerConnector",
    "ConsumerRebalanceListener",
    "ConsumerTimeout",
    "KafkaStream",
    "ListenerError",
    "Message",
    "MigratorError",
    "UsedAfterFork",
    "Whitelist",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module on first access and cache the name here, so later lookups are plain."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
