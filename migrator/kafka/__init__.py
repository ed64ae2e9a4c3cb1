"""Kafka adapters: the admin client, the embedded group member, the record fetcher."""
