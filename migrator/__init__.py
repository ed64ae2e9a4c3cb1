"""migrator: move Kafka consumer groups between ZooKeeper and Kafka coordination (KIP-125)."""

from migrator.config import ConsumerConfig
from migrator.consumer.connector import ConsumerConnector
from migrator.consumer.filters import Blacklist, Whitelist
from migrator.consumer.listener import ConsumerRebalanceListener
from migrator.consumer.message import Message
from migrator.consumer.stream import ConsumerTimeout, KafkaStream
from migrator.errors import ConfigError, ListenerError, MigratorError

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
