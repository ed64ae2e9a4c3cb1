"""The application-facing connector: streams, filters, the rebalance listener."""
