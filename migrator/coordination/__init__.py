"""Coordination: the pure decisions (authority, rebalance plans) and the one worker per connector that
turns events into rebalances."""
