"""The fetcher's simple Kafka commit (a legacy connector with offsets.storage=kafka) is bounded in time."""

from __future__ import annotations

import threading
import time

from migrator.kafka.fetcher import Fetcher
from migrator.protocol.partition import TopicPartition


def test_a_commit_nobody_answers_counts_as_refused_within_its_timeout_and_blocks_no_later_caller() -> None:
    fetcher = Fetcher("127.0.0.1:1", "g")  # nothing listens there: the commit never gets an answer
    try:
        began = time.monotonic()
        assert fetcher.commit({TopicPartition("t", 0): 5}, 0.3) == set()
        first = time.monotonic() - began
        began = time.monotonic()
        assert fetcher.commit({TopicPartition("t", 0): 6}, 5.0) == set()  # refused at once, not queued behind
        second = time.monotonic() - began
    finally:
        threading.Thread(target=fetcher.close, daemon=True).start()  # waits for the stuck commit: not here
    assert first < 5.0 and second < 1.0
