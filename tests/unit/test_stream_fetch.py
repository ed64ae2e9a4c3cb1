"""The stream's C-level hand-out and "caller runs" fetching, with a fake record source (pure logic; the
fetcher's client is exercised against the real cluster by the integration tests)."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import KafkaError
from confluent_kafka import Message as KafkaMessage

from migrator.consumer.handoff import Handoff
from migrator.consumer.stream import ConsumerTimeout, KafkaStream
from migrator.kafka.fetch_health import FetchHealth, FetchHealthTracker, FetchState
from migrator.kafka.fetcher import POLL_S, TOP_UP_BELOW, Fetcher, Route
from migrator.protocol.message import Chunk, Message
from migrator.protocol.partition import TopicPartition as TP


def chunk(epoch: int, *offsets: int, partition: int = 0) -> Chunk:
    return Chunk(TP("t", partition), epoch, [Message("t", partition, o, None, b"v", 0, "a-0") for o in offsets])


class FakeSource:
    """Hands out prepared polls; None means "another thread is polling"."""

    def __init__(self, polls: list[list[Chunk] | None]) -> None:
        self.polls = polls
        self.calls = 0
        self.waits: list[int] = []

    def fetch_for(self, stream: KafkaStream, timeout_s: float) -> list[Chunk] | None:
        self.calls += 1
        return self.polls.pop(0) if self.polls else []

    def waiting(self, delta: int) -> None:
        self.waits.append(delta)


def setup(polls: list[list[Chunk] | None], timeout_ms: int = 200) -> tuple[Handoff, KafkaStream, FakeSource]:
    h = Handoff()
    s = KafkaStream("a-0", h, consumer_timeout_ms=timeout_ms)
    src = FakeSource(polls)
    s.attach(src)
    return h, s, src


def test_a_stream_with_nothing_queued_fetches_for_itself_in_order() -> None:
    h, s, src = setup([])
    e = h.open({TP("t", 0): 0})
    src.polls = [[chunk(e, 0, 1)], [chunk(e, 2)]]
    assert [next(s).offset for _ in range(3)] == [0, 1, 2]
    assert src.calls == 2 and src.waits == []
    assert h.processed()[TP("t", 0)] == 2  # 2 is in hand


def test_queued_chunks_come_before_a_new_poll() -> None:
    h, s, src = setup([])
    e = h.open({TP("t", 0): 0})
    s.queue.put(chunk(e, 0))
    src.polls = [[chunk(e, 1)]]
    assert [next(s).offset, next(s).offset] == [0, 1]


def test_when_another_thread_polls_the_stream_waits_on_its_queue_announced() -> None:
    h, s, src = setup([None])
    e = h.open({TP("t", 0): 0})
    threading.Timer(0.05, lambda: s.queue.put(chunk(e, 7))).start()
    assert next(s).offset == 7
    assert src.waits == [1, -1]


def test_consumer_timeout_while_fetching_then_iterating_again_continues() -> None:
    h, s, src = setup([], timeout_ms=50)
    e = h.open({TP("t", 0): 0})
    it = iter(s)
    with pytest.raises(ConsumerTimeout):
        next(it)
    src.polls = [[chunk(e, 4)]]
    assert next(iter(s)).offset == 4  # a fresh iteration after the timeout


def test_a_revoke_stops_the_chunk_in_the_middle_and_counts_exactly_what_was_processed() -> None:
    h, s, _ = setup([])
    e = h.open({TP("t", 0): 0})
    s.queue.put(chunk(e, 0, 1, 2, 3))
    it = iter(s)
    assert [next(it).offset, next(it).offset] == [0, 1]
    done = threading.Event()
    threading.Thread(target=lambda: (h.revoke([TP("t", 0)], wait_s=5), done.set())).start()
    with pytest.raises(ConsumerTimeout):
        next(it)  # 1 is processed now; 2 and 3 are never handed out
    assert done.wait(2)
    assert h.processed()[TP("t", 0)] == 2


def test_suspend_stops_the_chunk_in_the_middle_and_resume_hands_out_the_rest() -> None:
    h, s, _ = setup([], timeout_ms=50)
    e = h.open({TP("t", 0): 0})
    s.queue.put(chunk(e, 0, 1, 2))
    it = iter(s)
    assert next(it).offset == 0
    h.suspend()
    with pytest.raises(ConsumerTimeout):
        next(it)
    assert h.processed()[TP("t", 0)] == 1
    h.resume()
    assert [next(s).offset, next(s).offset] == [1, 2]


def test_abandon_in_the_middle_of_a_chunk_keeps_the_held_record_unprocessed() -> None:
    h, s, _ = setup([])
    e = h.open({TP("t", 0): 0})
    s.queue.put(chunk(e, 0, 1, 2))
    it = iter(s)
    next(it), next(it)
    h.revoke([TP("t", 0)], wait_s=0.0)
    assert h.processed()[TP("t", 0)] == 1  # 0 processed, 1 abandoned: its next owner gets it again


def test_commit_in_the_middle_of_a_chunk_counts_the_held_record_once() -> None:
    h, s, _ = setup([])
    e = h.open({TP("t", 0): 0})
    s.queue.put(chunk(e, 0, 1, 2))
    it = iter(s)
    next(it), next(it)
    h.done_for_current_thread()
    assert h.processed()[TP("t", 0)] == 2
    assert next(it).offset == 2
    assert h.processed()[TP("t", 0)] == 2


def _raw(partition: int, offset: int, ts: tuple[int, int] = (1, 99)) -> KafkaMessage:
    return KafkaMessage(topic="t", partition=partition, offset=offset, value=b"v%d" % offset, timestamp=ts)


def test_dispatch_builds_one_chunk_per_partition_skips_old_records_and_keeps_its_callers() -> None:
    h = Handoff()
    mine, other = KafkaStream("a-0", h), KafkaStream("a-1", h)
    f = Fetcher.__new__(Fetcher)  # routing only: no client
    f._pending = None
    f._stop = threading.Event()
    f._health = FetchHealthTracker()
    f._routes = {TP("t", 0): Route(mine, 3, 5), TP("t", 1): Route(other, 3, 0)}
    batch = [_raw(0, 4), _raw(0, 5), _raw(1, 0, (0, -1)), _raw(0, 6), _raw(2, 0)]
    own = f._dispatch(batch, mine)
    assert [(c.tp, c.epoch, [m.offset for m in c.messages]) for c in own] == [(TP("t", 0), 3, [5, 6])]
    assert own[0].messages[0] == Message("t", 0, 5, None, b"v5", 99, "a-0")
    queued = other.queue.get_nowait()
    assert queued.messages == [Message("t", 1, 0, None, b"v0", -1, "a-1")]
    assert f._routes[TP("t", 0)].next_offset == 7 and f._routes[TP("t", 1)].next_offset == 1


def test_a_stream_whose_poll_brought_nothing_waits_on_its_queue_instead_of_polling_again() -> None:
    h, s, src = setup([], timeout_ms=-1)  # every poll brings nothing
    e = h.open({TP("t", 0): 0})
    threading.Timer(0.05, lambda: s.queue.put(chunk(e, 9))).start()
    assert next(s).offset == 9
    assert src.calls == 1 and src.waits == [1, -1]  # one poll, then asleep on the queue until the chunk came


class FakeClient:
    """The calls a routing change makes on the fetcher's client."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[tuple[str, int, int]]]] = []

    def incremental_assign(self, parts: list[object]) -> None:
        self.calls.append(("assign", [(p.topic, p.partition, p.offset) for p in parts]))  # type: ignore[attr-defined]

    def incremental_unassign(self, parts: list[object]) -> None:
        self.calls.append(("unassign", [(p.topic, p.partition, p.offset) for p in parts]))  # type: ignore[attr-defined]


def _routing_fetcher(known: dict[str, int]) -> tuple[Fetcher, FakeClient]:
    f = Fetcher.__new__(Fetcher)  # routing only: a fake client, no fetch thread
    f._consumer = FakeClient()  # type: ignore[assignment]
    f._pending, f._routes, f._partition_counts, f._closed, f._opened = None, {}, dict(known), False, False
    f._poll_lock, f._pending_lock, f._wake, f._stop = (
        threading.Lock(),
        threading.Lock(),
        threading.Event(),
        threading.Event(),
    )
    return f, f._consumer  # type: ignore[return-value]


def test_a_routing_change_is_applied_at_once_on_the_callers_thread_when_no_poll_is_in_progress() -> None:
    h = Handoff()
    s = KafkaStream("a-0", h)
    f, client = _routing_fetcher({"t": 4})
    f.route({TP("t", 0): Route(s, 1, 5), TP("t", 1): Route(s, 1, 0)})
    assert f._pending is None and client.calls == [("assign", [("t", 0, 5), ("t", 1, 0)])]
    kept = f._routes[TP("t", 1)]
    f.route({TP("t", 0): Route(s, 2, 3), TP("t", 1): Route(s, 1, 0)})  # 0 re-opened at a new epoch: re-seeked
    assert client.calls[1:] == [("unassign", [("t", 0, -1001)]), ("assign", [("t", 0, 3)])]
    assert f._routes[TP("t", 1)] is kept  # a kept partition keeps its route, and with it its position


def test_a_routing_change_needing_metadata_is_left_to_the_fetch_thread() -> None:
    f, client = _routing_fetcher({"t": 1})
    f.route({TP("t", 3): Route(KafkaStream("a-0", Handoff()), 1, 0)})  # a partition the client never saw
    assert f._pending is not None and client.calls == [] and f._wake.is_set()


def test_a_routing_change_during_a_poll_waits_for_it_so_no_record_is_routed_by_a_table_it_was_not_fetched_under() -> (
    None
):
    f, client = _routing_fetcher({"t": 1})
    with f._poll_lock:  # a poll in progress
        f.route({TP("t", 0): Route(KafkaStream("a-0", Handoff()), 1, 0)})
    assert f._pending is not None and client.calls == [] and f._wake.is_set()
    with f._poll_lock:  # what the polling thread does after its poll
        f._apply_pending()
    assert f._pending is None and client.calls == [("assign", [("t", 0, 0)])]


def test_an_owned_partition_that_cannot_be_fetched_is_logged_as_an_error_once(caplog: pytest.LogCaptureFixture) -> None:
    h = Handoff()
    f = Fetcher.__new__(Fetcher)  # routing only: no client
    f._pending = None
    f._stop = threading.Event()
    f._health = FetchHealthTracker()
    changes: list[FetchState] = []
    f.on_health_change = changes.append  # the connector posts a republish to its worker here
    f._routes = {TP("t", 0): Route(KafkaStream("a-0", h), 1, 0), TP("t", 1): Route(KafkaStream("a-1", h), 1, 0)}
    denied = KafkaMessage(topic="t", partition=1, offset=-1001, timestamp=(0, -1),
                          error=KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))  # fmt: skip
    with caplog.at_level("WARNING", logger="migrator.kafka.fetcher"):
        f._dispatch([_raw(0, 0), denied])
        f._dispatch([denied])
    assert f.fetch_state == FetchState(FetchHealth.DENIED, (TP("t", 1),))
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "denied: 1 owned partition(s) cannot be fetched: t-1" in errors[0], errors
    f._dispatch([_raw(1, 0)])
    assert f.fetch_state == FetchState()
    assert changes == [FetchState(FetchHealth.DENIED, (TP("t", 1),)), FetchState()]


class ScriptedClient:
    """A client whose `consume` calls return prepared batches, recording how long each was allowed to wait."""

    def __init__(self, batches: list[list[KafkaMessage]]) -> None:
        self.batches = batches
        self.waits: list[float] = []

    def consume(self, num_messages: int, timeout: float) -> list[KafkaMessage]:
        self.waits.append(timeout)
        return self.batches.pop(0)[:num_messages] if self.batches else []


def _consuming_fetcher(batches: list[list[KafkaMessage]]) -> tuple[Fetcher, ScriptedClient]:
    f = Fetcher.__new__(Fetcher)  # the batch logic only
    f._consumer = ScriptedClient(batches)  # type: ignore[assignment]
    f._leaders_checked = float("inf")  # no leader check
    f._opened = False  # not the first batch after an assignment
    f._pending = None  # no routing change waiting for the poll
    return f, f._consumer  # type: ignore[return-value]


def test_a_small_busy_batch_fills_during_one_sleep_not_a_wait_in_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("migrator.kafka.fetcher.time.sleep", slept.append)
    f, client = _consuming_fetcher([[_raw(0, 0)], [_raw(0, 1), _raw(1, 0)], [_raw(0, 2)]])
    assert [(m.partition(), m.offset()) for m in f._consume(0.2)] == [(0, 0), (0, 1), (1, 0), (0, 2)]
    assert slept == [POLL_S] and client.waits == [0.2, 0, 0]  # woken once by the sleep, never inside the client


def test_a_lone_record_or_a_large_batch_goes_out_without_waiting_for_more(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("migrator.kafka.fetcher.time.sleep", slept.append)
    f, client = _consuming_fetcher([[_raw(0, 0)], []])
    assert len(f._consume(0.2)) == 1  # idle: a first record alone
    large = [_raw(0, o) for o in range(TOP_UP_BELOW)]
    f, client = _consuming_fetcher([large[:1], large[1:]])
    assert len(f._consume(0.2)) == TOP_UP_BELOW  # a backlog or a high rate: not held back
    assert slept == [] and client.waits == [0.2, 0]


def test_the_first_batch_after_partitions_were_opened_goes_out_without_filling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slept: list[float] = []
    monkeypatch.setattr("migrator.kafka.fetcher.time.sleep", slept.append)
    f, client = _consuming_fetcher([[_raw(0, 0)], [_raw(0, 1), _raw(1, 0)], [_raw(0, 2)], [_raw(0, 3), _raw(0, 4)], []])
    f._opened = True  # a routing change added partitions: a rebalance waits for this batch
    assert len(f._consume(0.2)) == 3 and slept == [] and not f._opened
    assert len(f._consume(0.2)) == 3 and slept == [POLL_S]  # the next small batch fills as before
    assert client.waits == [0.2, 0, 0.2, 0, 0]


def _full_stream(chunks: int) -> tuple[Fetcher, KafkaStream, Handoff]:
    h = Handoff()
    s = KafkaStream("a-0", h, queue_chunks=chunks)
    f = Fetcher.__new__(Fetcher)  # the queueing only: no client
    f._stop, f._pending = threading.Event(), None
    e = h.open({TP("t", 0): 0})
    for i in range(chunks):
        s.queue.put(chunk(e, i))
    return f, s, h


def test_a_fetch_waits_for_room_in_a_full_queue_and_the_stream_taking_a_chunk_makes_it() -> None:
    f, s, h = _full_stream(2)
    e = h.epochs[TP("t", 0)]
    putter = threading.Thread(target=f._put, args=(Route(s, e, 3), chunk(e, 2)))
    putter.start()
    putter.join(0.3)
    assert putter.is_alive() and s.queue.qsize() == 2  # the bound holds
    it = iter(s)
    assert next(it).offset == 0  # the stream takes a chunk: room for one
    putter.join(2.0)
    assert not putter.is_alive()
    assert [next(it).offset for _ in range(2)] == [1, 2]


def test_a_fetch_waiting_for_room_drops_a_chunk_of_a_partition_being_taken_away() -> None:
    f, s, h = _full_stream(1)
    e = h.epochs[TP("t", 0)]
    putter = threading.Thread(target=f._put, args=(Route(s, e, 3), chunk(e, 1)))
    putter.start()
    f._pending = {}  # a routing change without the partition
    putter.join(2.0)
    assert not putter.is_alive() and s.queue.qsize() == 1


def test_a_batch_a_routing_change_waits_for_goes_out_without_filling(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("migrator.kafka.fetcher.time.sleep", slept.append)
    f, client = _consuming_fetcher([[_raw(0, 0)], [_raw(0, 1), _raw(1, 0)], [_raw(0, 2)]])
    f._pending = {}  # `route` arrived during the poll: the partitions it opens wait for this batch
    assert len(f._consume(0.2)) == 3 and slept == [] and client.waits == [0.2, 0]
