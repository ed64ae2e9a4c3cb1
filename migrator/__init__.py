"""migrator: move Kafka consumer groups between ZooKeeper and Kafka coordination (KIP-125)."""

from migrator.config import ConsumerConfig
from migrator.connector import ConsumerConnector
from migrator.consumer.listener import ConsumerRebalanceListener
from migrator.consumer.stream import ConsumerTimeout, KafkaStream
from migrator.errors import ConfigError, ListenerError, MigratorError
from migrator.protocol.filters import Blacklist, Whitelist
from migrator.protocol.message import Message

__all__ = [
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
    "Whitelist",
]
