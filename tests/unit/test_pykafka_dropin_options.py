"""The drop-in pykafka API: its arguments map onto the connector's properties, and what it cannot honour is
refused before anything connects (`migrator.pykafka`, docs/pykafka.md#the-drop-in-api)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from migrator.config import ConsumerConfig
from migrator.consumer.stream import ConsumerTimeout
from migrator.protocol.message import Message as RawMessage
from migrator.protocol.partition import TopicPartition
from migrator.pykafka import ConsumerStoppedException, KafkaClient, OffsetType, RoundRobinProtocol, UnsupportedOption
from migrator.pykafka import consumer as consumer_module
from migrator.pykafka.consumer import POLL_MS, BalancedConsumer
from migrator.pykafka.options import DEFAULTS, consumer_properties
from tests.helpers.pykafka_peer import pykafka_python


def test_pykafkas_defaults_become_a_valid_pykafka_layout_connector() -> None:
    options = consumer_properties(b"orders", b"readers", {}, bootstrap="b1:9092")
    props = options.properties
    assert props["group.id"] == "readers"
    assert props["zookeeper.layout"] == "pykafka"
    assert props["zookeeper.connect"] == "127.0.0.1:2181"  # pykafka's default zookeeper_hosts
    assert props["kafka.bootstrap.servers"] == "b1:9092"
    assert props["auto.commit.enable"] == "false"  # pykafka's default, not migrator's
    assert props["auto.offset.reset"] == "smallest"  # OffsetType.EARLIEST, pykafka's default
    assert props["partition.assignment.strategy"] == "range"
    assert (options.topic, options.consumer_timeout_ms, options.auto_start) == ("orders", -1, True)
    ConsumerConfig.from_mapping(props)  # every value is one the connector accepts


def test_arguments_map_to_the_properties_of_the_same_meaning() -> None:
    kwargs = {
        "zookeeper_connect": "zk1:2181/kafka",
        "auto_commit_enable": True,
        "auto_commit_interval_ms": 500,
        "auto_offset_reset": OffsetType.LATEST,
        "membership_protocol": RoundRobinProtocol,
        "rebalance_max_retries": 20,
        "rebalance_backoff_ms": 400,
        "consumer_timeout_ms": 200,
        "fetch_message_max_bytes": 2048,
        "queued_max_messages": 10,  # accepted without effect
        "compacted_topic": True,
    }
    bridge = {"coordination.migration.enabled": "true"}
    options = consumer_properties("orders", "readers", kwargs, bootstrap="b1:9092", extra=bridge)
    cfg = ConsumerConfig.from_mapping(options.properties)
    assert cfg.zookeeper_connect == "zk1:2181/kafka"
    assert (cfg.auto_commit_enable, cfg.auto_commit_interval_ms, cfg.offset_reset) == (True, 500, "latest")
    assert cfg.partition_assignment_strategy == "roundrobin"
    assert (cfg.rebalance_max_retries, cfg.rebalance_backoff_ms) == (20, 400)
    assert cfg.fetch_message_max_bytes == 2048
    assert cfg.migration_enabled
    assert options.consumer_timeout_ms == 200


def test_pykafkas_own_protocol_objects_are_recognised_by_name() -> None:
    class PykafkaRoundRobin:  # pykafka's GroupMembershipProtocol namedtuple, as far as we read it
        protocol_type = b"consumer"
        protocol_name = b"roundrobin"

    props = consumer_properties("t", "g", {"membership_protocol": PykafkaRoundRobin()}).properties
    assert props["partition.assignment.strategy"] == "roundrobin"


@pytest.mark.parametrize(
    ("kwargs", "refused"),
    [
        ({"use_rdkafka": True}, ("use_rdkafka",)),
        ({"reset_offset_on_start": True}, ("reset_offset_on_start",)),
        ({"post_rebalance_callback": lambda *a: None}, ("post_rebalance_callback",)),
        ({"zookeeper": object()}, ("zookeeper",)),
        ({"reset_offset_on_fetch": False}, ("reset_offset_on_fetch",)),
        ({"auto_offset_reset": 1234}, ("auto_offset_reset",)),
        ({"membership_protocol": object()}, ("membership_protocol",)),
        ({"use_rdkafka": True, "auto_offset_reset": 5}, ("use_rdkafka", "auto_offset_reset")),
    ],
)
def test_what_cannot_be_honoured_is_refused_all_at_once(kwargs: dict[str, object], refused: tuple[str, ...]) -> None:
    with pytest.raises(UnsupportedOption) as caught:
        consumer_properties("t", "g", kwargs)
    assert caught.value.options == refused
    assert len(caught.value.problems) == len(refused)


def test_a_property_a_pykafka_argument_decides_is_refused() -> None:
    with pytest.raises(UnsupportedOption) as caught:
        consumer_properties("t", "g", {}, extra={"group.id": "other"})
    assert caught.value.options == ("properties['group.id']",)


def test_an_argument_pykafka_does_not_have_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="consumer_groupp"):
        consumer_properties("t", "g", {"consumer_groupp": "x"})


def test_managed_consumers_and_client_options_we_cannot_honour_are_refused_before_connecting() -> None:
    topic = KafkaClient(hosts="b1:9092", zookeeper_hosts="zk:2181").topics["orders"]
    assert topic.name == b"orders"
    with pytest.raises(UnsupportedOption) as caught:
        topic.get_balanced_consumer(b"g", managed=True)
    assert caught.value.options == ("managed",)
    with pytest.raises(UnsupportedOption):
        topic.get_balanced_consumer(b"g", use_rdkafka=True)  # refused before any connection is tried
    with pytest.raises(UnsupportedOption) as client_refusal:
        KafkaClient(use_greenlets=True)
    assert client_refusal.value.options == ("use_greenlets",)


def test_a_consumer_not_started_has_no_partitions_and_refuses_what_it_cannot_do() -> None:
    consumer = BalancedConsumer(b"orders", None, b"g", auto_start=False)
    assert consumer.partitions == {}
    assert consumer.held_offsets is None
    with pytest.raises(UnsupportedOption):
        consumer.commit_offsets([(0, 5)])
    with pytest.raises(UnsupportedOption):
        consumer.reset_offsets()


def test_every_argument_of_pykafkas_balanced_consumer_is_handled() -> None:
    """The table of arguments is pykafka 2.8.0's own signature (read from the real library), defaults included."""
    script = (
        "import inspect, json; from pykafka import BalancedConsumer; "
        "ps = inspect.signature(BalancedConsumer.__init__).parameters; "
        "print(json.dumps({n: repr(p.default) for n, p in ps.items() if p.default is not p.empty}))"
    )
    out = subprocess.run([str(pykafka_python()), "-c", script], capture_output=True, text=True, check=True)
    theirs = json.loads(out.stdout)
    assert set(theirs) == set(DEFAULTS)
    ours = {n: repr(v) for n, v in DEFAULTS.items() if n != "membership_protocol"}
    assert {n: v for n, v in theirs.items() if n != "membership_protocol"} == ours


def test_the_api_does_not_import_pykafka() -> None:
    code = "import sys; sys.modules['pykafka'] = None; import migrator.pykafka; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


class _Records:
    """A stream as the facade sees it: an iterator that raises `ConsumerTimeout` and continues after it."""

    def __init__(self, script: list[object]) -> None:
        self._script = list(script)

    def __iter__(self) -> _Records:
        return self

    def __next__(self) -> object:
        if not self._script:
            raise StopIteration
        item = self._script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item


class _FakeConnector:
    """Stands in for `ConsumerConnector` so the facade's own logic runs without a cluster: its stream hands
    out `script` (a `ConsumerTimeout` entry is a poll that found nothing), then ends as at shutdown."""

    script: list[object] = []

    def __init__(self, properties: dict[str, object]) -> None:
        self.properties = properties
        self.commits = 0
        self.shut = False
        self.owned = {TopicPartition("orders", 0): "t-0", TopicPartition("orders", 1): "t-0"}

    def create_message_streams(self, topics: dict[str, int]) -> dict[str, list[object]]:
        return {"orders": [_Records(self.script)]}

    def commit_offsets(self) -> None:
        self.commits += 1

    def shutdown(self) -> None:
        self.shut = True


def test_consume_maps_pykafkas_calls_onto_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consumer_module, "ConsumerConnector", _FakeConnector)
    _FakeConnector.script = [RawMessage("orders", 1, 7, b"k", b"v", 1_700_000_000_000)]
    consumer = BalancedConsumer(b"orders", None, b"g", deserializer=lambda v, k: (v.decode(), k.decode()))
    assert consumer.connector is not None and consumer.connector.properties["consumer.timeout.ms"] == POLL_MS
    assert consumer.held_offsets == {0: OffsetType.EARLIEST, 1: OffsetType.EARLIEST}
    message = consumer.consume()
    assert message is not None
    assert (message.value, message.partition_key, message.offset, message.partition_id) == ("v", "k", 7, 1)
    assert message.partition.id == 1 and message.partition.topic.name == b"orders"
    assert message.timestamp_dt is not None and message.timestamp_dt.year == 2023
    assert consumer.held_offsets == {0: OffsetType.EARLIEST, 1: 7}
    consumer.commit_offsets()
    assert consumer.connector.commits == 1
    with pytest.raises(ConsumerStoppedException):
        consumer.consume()  # the stream ended: the connector shut down
    connector = consumer.connector
    consumer.stop()
    assert connector.shut and consumer.connector is None and consumer.held_offsets is None
    with pytest.raises(ConsumerStoppedException):
        consumer.consume()


def test_a_poll_that_finds_nothing_is_none_without_blocking_or_after_the_consumer_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(consumer_module, "ConsumerConnector", _FakeConnector)
    quiet = ConsumerTimeout("nothing")
    _FakeConnector.script = [quiet, quiet, quiet, RawMessage("orders", 0, 1, None, b"v", -1)]
    consumer = BalancedConsumer(b"orders", None, b"g", consumer_timeout_ms=0)
    assert consumer.consume(block=True) is None  # consumer_timeout_ms passed
    assert consumer.consume(block=False) is None
    assert [m.offset for m in consumer] == []  # iteration ends at the next None, as pykafka's
    late = consumer.consume()
    assert late is not None and late.timestamp is None and late.timestamp_dt is None
