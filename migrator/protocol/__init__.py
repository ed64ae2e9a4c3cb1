"""The values every layer shares: partitions, the ZooKeeper layout's node contents, the Kafka group as the
brokers describe it, records, topic filters and the rebalance worker's events.

It imports nothing of the shell (no kazoo, confluent_kafka, prometheus_client, click) and nothing of the
other subpackages, so adapters and the pure core can both depend on it without depending on each other.
"""
