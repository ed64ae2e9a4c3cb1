"""A drop-in for pykafka's ZooKeeper-coordinated `BalancedConsumer` (docs/pykafka.md#the-drop-in-api).

Change `pykafka` to `migrator.pykafka` in a program's imports and its consumers become migrator connectors in
pykafka's ZooKeeper layout: members of the same group as its pykafka consumers, or KIP-125 bridges with
`properties={"coordination.migration.enabled": "true"}`. pykafka itself is never imported.

    from migrator.pykafka import KafkaClient
    from migrator.pykafka.common import OffsetType

    topic = KafkaClient(hosts="b1:9092", zookeeper_hosts="zk1:2181").topics[b"orders"]
    consumer = topic.get_balanced_consumer(b"readers", auto_commit_enable=True)
    for message in consumer:
        handle(message.value)
"""

from __future__ import annotations

from migrator.pykafka.client import Cluster, KafkaClient, Topic
from migrator.pykafka.common import OffsetType
from migrator.pykafka.consumer import BalancedConsumer
from migrator.pykafka.exceptions import ConsumerStoppedException, UnsupportedOption
from migrator.pykafka.membershipprotocol import RangeProtocol, RoundRobinProtocol
from migrator.pykafka.message import Message, Partition

__all__ = [
    "BalancedConsumer",
    "Cluster",
    "ConsumerStoppedException",
    "KafkaClient",
    "Message",
    "OffsetType",
    "Partition",
    "RangeProtocol",
    "RoundRobinProtocol",
    "Topic",
    "UnsupportedOption",
]
