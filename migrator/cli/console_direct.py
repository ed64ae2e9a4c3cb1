"""The parts of `console-consumer` that need no group coordination: one partition read straight from the
brokers (`--partition`, as kafka-console-consumer assigns it), and the clean-up of a throwaway group."""

from __future__ import annotations

import logging
import random
import signal
import time
from types import FrameType
from typing import Any, Protocol

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from migrator.cli.common import Connection, zookeeper
from migrator.config import ConsumerConfig
from migrator.errors import EXIT_OK, MigratorError, UsageError
from migrator.logs import LIBRDKAFKA_LOGGER
from migrator.protocol.message import Message
from migrator.zk.brokers import registered_brokers
from migrator.zk.client import connect
from migrator.zk.errors import ZooKeeperError
from migrator.zk.paths import GroupPaths
from migrator.zk.session import close, delete_tree

log = logging.getLogger(__name__)


class _Printer(Protocol):
    def emit(self, m: Message) -> None: ...


def parse_start_offset(value: str, from_beginning: bool) -> int:
    """--offset earliest|latest|N (--from-beginning means earliest) as a librdkafka start offset."""
    text = value.strip().lower()
    if from_beginning and text not in ("latest", "earliest"):
        raise UsageError("--from-beginning and --offset N contradict each other")
    if from_beginning or text == "earliest":
        return int(OFFSET_BEGINNING)
    if text == "latest":
        return int(OFFSET_END)
    if not (text.isascii() and text.isdigit()):
        raise UsageError(f"--offset {value!r}: expected earliest, latest or a non-negative offset")
    return int(text)


def _brokers(conn: Connection) -> str:
    if conn.bootstrap_servers:
        return conn.bootstrap_servers
    if not conn.zookeeper:
        raise UsageError("--partition reads from the brokers: give --bootstrap-server (or -z to find them)")
    with zookeeper(conn) as zk:
        found = registered_brokers(zk)
    if not found:
        raise UsageError("--partition: no broker is registered under /brokers/ids; give --bootstrap-server")
    return found


def consume_partition(
    conn: Connection, topic: str, partition: int, start: int, printer: _Printer, max_messages: int | None,
    timeout_ms: int | None,
) -> int:  # fmt: skip
    """Print `topic`-`partition` from `start` until --max-messages, --timeout-ms or SIGINT/SIGTERM (exit 0).
    No group is joined and nothing is committed (the group id is a throwaway librdkafka requires)."""
    consumer = Consumer({
        "bootstrap.servers": _brokers(conn), "group.id": f"console-consumer-{random.randint(0, 99999)}",
        "enable.auto.commit": False, "enable.partition.eof": False, "logger": logging.getLogger(LIBRDKAFKA_LOGGER),
        **conn.kafka_properties,
    })  # fmt: skip
    stopped: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stopped.append(signum)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        consumer.assign([KafkaTopicPartition(topic, partition, start)])
        _print_until_done(consumer, printer, max_messages, timeout_ms, stopped)
    except KafkaException as exc:
        raise MigratorError(f"reading {topic}-{partition}: {exc.args[0].str() if exc.args else exc}") from exc
    finally:
        consumer.close()
        for s, handler in previous.items():
            signal.signal(s, handler)
    return EXIT_OK


def _print_until_done(
    consumer: Any, printer: _Printer, max_messages: int | None, timeout_ms: int | None, stopped: list[int]
) -> None:
    printed, last = 0, time.monotonic()
    while not stopped and (max_messages is None or printed < max_messages):
        if timeout_ms is not None and time.monotonic() - last >= timeout_ms / 1000:
            return
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            if msg.error().fatal() or not msg.error().retriable():
                raise KafkaException(msg.error())
            continue
        _kind, ts = msg.timestamp()
        printer.emit(Message(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(), ts))
        printed, last = printed + 1, time.monotonic()


def delete_group(config: ConsumerConfig) -> None:
    """Remove a throwaway group's /consumers/<group> tree, as kafka-console-consumer does (best effort)."""
    timeout_s = config.zookeeper_connection_timeout_ms / 1000
    try:
        tls = config.zookeeper_tls
        zk = connect(config.zookeeper_connect, auth=config.zookeeper_auth, timeout_s=timeout_s, tls=tls)
    except MigratorError as exc:
        log.warning("could not delete the throwaway group %s: %s", config.group_id, exc)
        return
    try:
        delete_tree(zk, GroupPaths(config.group_id).root)
    except ZooKeeperError as exc:
        log.warning("could not delete the throwaway group %s: %s", config.group_id, exc)
    finally:
        close(zk)
