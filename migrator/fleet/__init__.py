"""The fleet scan: classify every consumer group of several ZooKeeper ensembles, and switch the
ones fully migrated to bridges to Kafka coordination in waves, with rollback. See docs/fleet.md."""
