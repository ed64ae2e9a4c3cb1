"""`migrator console-consumer`: the Scala `kafka-console-consumer --zookeeper` on top of `ConsumerConnector`.

It exists so that operators can watch a group's topics (and try a bridge) with the same properties file
their legacy consumers use. What it prints is exactly what it counts as processed, so the group's offsets
after a run (`--max-messages`, SIGTERM, SIGINT) point at the first record it did not print:

- Every stream thread takes a *ticket* before asking its stream for a record. With `--max-messages N` only
  N tickets exist, so no thread ever takes a record it will not print; a record taken but not printed
  could be neither released (the connector's rebalance waits for it) nor committed (it would be lost).
- Streams are polled with a short internal `consumer.timeout.ms`, so threads notice a stop quickly and
  give a ticket back when their partitions are idle.
- One lock serialises output: lines from several threads never interleave, each is flushed at once.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import random
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, NoReturn, Protocol

import click

from migrator.cli.common import Connection, KeyValue, _quiet_libraries, connection_options
from migrator.cli.console_direct import consume_partition, delete_group, parse_start_offset
from migrator.cli.interrupts import resent_outside_kazoo
from migrator.config import ConsumerConfig, config_error, load_properties
from migrator.connector import ConsumerConnector
from migrator.consumer.stream import ConsumerTimeout, KafkaStream
from migrator.errors import EXIT_FAILED, EXIT_OK, ConfigError, EnvironmentProblem, MigratorError, UsageError
from migrator.names import validate_group, validate_topic
from migrator.protocol.filters import Blacklist, TopicFilter, Whitelist
from migrator.protocol.message import Message

log = logging.getLogger(__name__)

POLL_MS = 200
"""Internal `consumer.timeout.ms`: how quickly a stream thread notices a stop or gives back an idle ticket."""


# ---------------------------------------------------------------------------------------------- output


def _text_or_b64(name: str, data: bytes | None) -> dict[str, Any]:
    if data is None:
        return {name: None}
    try:
        return {name: data.decode("utf-8")}
    except UnicodeDecodeError:
        return {f"{name}_b64": base64.b64encode(data).decode("ascii")}


def format_text(m: Message) -> str:
    """The value only, as the Scala DefaultMessageFormatter prints it (`null` for a null value)."""
    return "null" if m.value is None else m.value.decode("utf-8", errors="replace")


def format_json(m: Message) -> str:
    """One self-describing object; bytes that are not UTF-8 go to `key_b64`/`value_b64` instead."""
    doc: dict[str, Any] = {"topic": m.topic, "partition": m.partition, "offset": m.offset, "thread": m.thread_id}
    doc |= _text_or_b64("key", m.key)
    doc |= _text_or_b64("value", m.value)
    doc["timestamp"] = m.timestamp
    return json.dumps(doc, ensure_ascii=False)


FORMATTERS: dict[str, Callable[[Message], str]] = {"text": format_text, "json": format_json}

FORMATTER_PROPERTIES = {
    "print.timestamp": "false", "print.partition": "false", "print.offset": "false", "print.key": "false",
    "print.value": "true", "key.separator": "\t", "null.literal": "null",
}  # fmt: skip
"""kafka-console-consumer's DefaultMessageFormatter properties (--property) and their defaults."""


def _flag(value: str) -> bool:
    return value.strip().lower() == "true"


def text_formatter(properties: dict[str, str]) -> Callable[[Message], str]:
    """The text format as kafka-console-consumer's DefaultMessageFormatter prints it: CreateTime:<ms>,
    Partition:<p>, Offset:<o>, key, value (each only when its print.* is true), joined by key.separator."""
    unknown = sorted(set(properties) - set(FORMATTER_PROPERTIES))
    if unknown:
        raise UsageError(f"--property {unknown[0]}: unknown; known are {', '.join(sorted(FORMATTER_PROPERTIES))}")
    o = {**FORMATTER_PROPERTIES, **properties}
    sep, null = o["key.separator"], o["null.literal"]

    def text(data: bytes | None) -> str:
        return null if data is None else data.decode("utf-8", errors="replace")

    def fmt(m: Message) -> str:
        fields = [
            *([f"CreateTime:{m.timestamp}"] if _flag(o["print.timestamp"]) else []),
            *([f"Partition:{m.partition}"] if _flag(o["print.partition"]) else []),
            *([f"Offset:{m.offset}"] if _flag(o["print.offset"]) else []),
            *([text(m.key)] if _flag(o["print.key"]) else []),
            *([text(m.value)] if _flag(o["print.value"]) else []),
        ]
        return sep.join(fields)

    return fmt


class _ByteSink(Protocol):
    """Where the printer writes: stdout's binary buffer, or a text stream without one (`_TextAsBinary`)."""

    def write(self, data: bytes, /) -> int: ...

    def flush(self) -> None: ...


class Printer:
    """The single writer: one whole line per record, flushed, whichever thread calls."""

    def __init__(self, fmt: Callable[[Message], str], out: _ByteSink | None = None) -> None:
        self._fmt = fmt
        self._out = out if out is not None else _stdout_bytes()
        self._lock = threading.Lock()

    def emit(self, m: Message) -> None:
        line = (self._fmt(m) + "\n").encode("utf-8", errors="replace")
        with self._lock:
            self._out.write(line)
            self._out.flush()


def _stdout_bytes() -> _ByteSink:
    # UTF-8 whatever the locale: a C locale would otherwise fail on the first non-ASCII value.
    return getattr(sys.stdout, "buffer", None) or _TextAsBinary(sys.stdout)


class _TextAsBinary:
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, data: bytes) -> int:
        return int(self._stream.write(data.decode("utf-8")) or 0)

    def flush(self) -> None:
        self._stream.flush()


# ---------------------------------------------------------------------------------------------- the run


class Tickets:
    """How many more records may be taken: unlimited, or `--max-messages` minus printed minus in flight."""

    def __init__(self, limit: int | None) -> None:
        self._limit = limit
        self._cond = threading.Condition()
        self._printed = 0
        self._in_flight = 0
        self._waiting = 0

    @property
    def printed(self) -> int:
        return self._printed

    def take(self, stopped: threading.Event) -> bool:
        """Wait for a ticket; False once `stopped` is set (checked every poll)."""
        with self._cond:
            self._waiting += 1
            try:
                while not stopped.is_set():
                    if self._limit is None or self._printed + self._in_flight < self._limit:
                        self._in_flight += 1
                        return True
                    self._cond.wait(POLL_MS / 1000.0)
                return False
            finally:
                self._waiting -= 1

    def give_back(self) -> bool:
        """Return an unused ticket; True when another thread is waiting for one (so yield to it)."""
        with self._cond:
            self._in_flight -= 1
            self._cond.notify()
            return self._waiting > 0

    def used(self) -> bool:
        """A ticket's record was printed; True when that was the last record allowed."""
        with self._cond:
            self._in_flight -= 1
            self._printed += 1
            return self._limit is not None and self._printed >= self._limit


@dataclass
class RunResult:
    printed: int
    reason: str
    errors: list[str] = field(default_factory=list)
    abandoned: bool = False
    """A thread holds a record it could not print: it may not be committed, and the connector cannot
    release its partition without it, so a clean shutdown is impossible."""


class ConsoleRun:
    """Drains every stream on its own thread until `--max-messages`, idleness, a signal or a failure."""

    def __init__(
        self,
        connector: ConsumerConnector,
        streams: list[KafkaStream],
        printer: Printer,
        max_messages: int | None,
        idle_timeout_ms: int | None,
        *,
        commit: bool = True,
    ) -> None:
        self.connector = connector
        self.commit = commit
        self.streams = streams
        self.printer = printer
        self.tickets = Tickets(max_messages)
        self.idle_timeout_s = None if idle_timeout_ms is None else idle_timeout_ms / 1000.0
        self.stopped = threading.Event()
        self.signalled = False  # set by the signal handler only: it must not take locks
        self._reason = ""
        self._errors: list[str] = []
        self._abandoned = False
        self._last_record = time.monotonic()
        self._state_lock = threading.Lock()

    def stop(self, reason: str, error: str | None = None, abandoned: bool = False) -> None:
        with self._state_lock:
            if not self._reason:
                self._reason = reason
            if error:
                self._errors.append(error)
            self._abandoned = self._abandoned or abandoned
        self.stopped.set()

    def run(self) -> RunResult:
        threads = [
            threading.Thread(target=self._drain, args=(s,), name=f"console-{s.thread_id}", daemon=True)
            for s in self.streams
        ]
        for t in threads:
            t.start()
        while not self.stopped.wait(0.1):
            if self.signalled:
                self.stop("signal")
            elif not any(t.is_alive() for t in threads):
                self.stop("streams ended")
        for t in threads:
            t.join()
        return RunResult(self.tickets.printed, self._reason, list(self._errors), self._abandoned)

    def _drain(self, stream: KafkaStream) -> None:
        if self._take_and_print(stream) and self.commit:
            # Everything this thread took was printed: its current record counts as processed too.
            try:
                self.connector.commit_offsets()
            except TimeoutError as exc:  # ZooKeeper or Kafka unreachable: the shutdown that follows is bounded
                log.warning("%s", exc)

    def _take_and_print(self, stream: KafkaStream) -> bool:
        """Loop until stopped; False when a taken record could not be printed (it must stay unprocessed)."""
        it: Iterator[Message] = iter(stream)
        try:
            while self.tickets.take(self.stopped):
                try:
                    m = next(it)
                except ConsumerTimeout:
                    if self.tickets.give_back():
                        self.stopped.wait(POLL_MS / 2000.0)  # let a thread with records have the ticket
                    self._check_idle()
                    continue
                except StopIteration:
                    self.tickets.give_back()
                    return True
                try:
                    self.printer.emit(m)
                except Exception as exc:  # a closed stdout (BrokenPipeError) or a full disk
                    self.tickets.give_back()
                    self.stop("output failed", f"cannot write to stdout: {exc}", abandoned=True)
                    return False
                self._last_record = time.monotonic()
                if self.tickets.used():
                    self.stop("max messages")
        except Exception as exc:  # from the connector, before a record was handed out
            log.debug("stream %s failed", stream.thread_id, exc_info=True)
            self.stop("failed", f"{stream.thread_id}: {exc}")
        return True

    def _check_idle(self) -> None:
        if self.idle_timeout_s is not None and time.monotonic() - self._last_record >= self.idle_timeout_s:
            self.stop("idle")


# ---------------------------------------------------------------------------------------------- config


THROWAWAY_GROUP = "console-consumer-{n}"
"""The group of a run without -g or group.id, as kafka-console-consumer names it; it never commits and its
ZooKeeper nodes are deleted when the run ends."""


@dataclass(frozen=True)
class Options:
    conn: Connection
    group: str | None
    from_beginning: bool
    consumer_properties: dict[str, str]
    consumer_config: str | None
    migration: bool
    metrics_port: int | None
    timeout_ms: int | None = None


def _file_properties(o: Options) -> dict[str, str]:
    return dict(load_properties(o.consumer_config)) if o.consumer_config else {}


def build_config(o: Options) -> tuple[ConsumerConfig, int | None]:
    """The connector's properties: file < --consumer-property < the dedicated options.

    Returns the validated config (with the internal poll timeout) and the user's `consumer.timeout.ms`
    (None when not set), which ends the run after that long without a record, as in the Scala tool.
    -z and -g may be left out when the file has zookeeper.connect and group.id; without any group id
    the run uses a throwaway group that never commits (`THROWAWAY_GROUP`).
    """
    props = _file_properties(o)
    props.update(o.consumer_properties)
    if o.conn.zookeeper:
        props["zookeeper.connect"] = o.conn.zookeeper
    elif not props.get("zookeeper.connect"):
        raise UsageError("--zookeeper is required (or zookeeper.connect in --consumer.config, or $MIGRATOR_ZOOKEEPER)")
    if o.group is not None:
        props["group.id"] = o.group
    elif not props.get("group.id"):
        props["group.id"] = THROWAWAY_GROUP.format(n=random.randint(0, 99999))
        props["auto.commit.enable"] = "false"
    props.setdefault("zookeeper.connection.timeout.ms", str(int(o.conn.connect_timeout_s * 1000)))
    props.setdefault("offsets.channel.socket.timeout.ms", str(int(o.conn.connect_timeout_s * 1000)))
    if o.from_beginning:
        props["auto.offset.reset"] = "smallest"
    if o.conn.zk_auth:
        props["zookeeper.auth"] = o.conn.zk_auth
    props.update(o.conn.zk_tls_properties)
    for key, value in o.conn.kafka_properties.items():
        props[f"kafka.{key}"] = value
    if o.migration:
        props["coordination.migration.enabled"] = "true"
    bridge = props.get("coordination.migration.enabled", "").strip().lower() == "true"
    if o.conn.bootstrap_servers:
        key = "coordination.migration.bootstrap.servers" if bridge else "kafka.bootstrap.servers"
        props[key] = o.conn.bootstrap_servers
    elif o.migration and not (
        props.get("coordination.migration.bootstrap.servers") or props.get("kafka.bootstrap.servers")
    ):
        raise UsageError("--migration needs --bootstrap-servers: the Kafka cluster the embedded member joins")
    if o.metrics_port is not None:
        props["metrics.port"] = str(o.metrics_port)
    if o.timeout_ms is not None:
        props["consumer.timeout.ms"] = str(o.timeout_ms)
    try:
        idle = ConsumerConfig.from_mapping(props).consumer_timeout_ms  # validates everything before connecting
    except ConfigError as exc:
        if not o.consumer_config:
            raise
        raise config_error(exc.problems, f"{o.consumer_config} (with the command-line options)") from None
    props["consumer.timeout.ms"] = str(POLL_MS if idle < 0 else min(POLL_MS, idle))
    return ConsumerConfig.from_mapping(props), (None if idle < 0 else idle)


def check_port_free(port: int) -> None:
    """Before the connector joins the group: a busy --metrics-port would otherwise fail inside it, after
    it registered, with a traceback. (Checked by binding as the metrics server does, on every address.)"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server does: TIME_WAIT is no owner
        try:
            probe.bind(("", port))
        except OSError as exc:
            raise EnvironmentProblem(
                f"--metrics-port {port}: cannot listen there ({exc.strerror or exc}); choose a free port"
            ) from exc


def topic_selection(topic: str | None, whitelist: str | None, blacklist: str | None) -> str | TopicFilter:
    given = [x for x in (topic, whitelist, blacklist) if x is not None]
    if len(given) != 1:
        raise UsageError("give exactly one of --topic, --whitelist, --blacklist")
    if topic is not None:
        return validate_topic(topic)
    return Whitelist(whitelist) if whitelist is not None else Blacklist(blacklist or "")


# ---------------------------------------------------------------------------------------------- command


@click.command("console-consumer")
@connection_options(zookeeper_required=False)
@click.option(
    "--group", "-g", callback=lambda _c, _p, v: None if v is None else validate_group(v), metavar="GROUP",
    help="Consumer group (default: group.id of --consumer.config, else a throwaway console-consumer-N that "
    "never commits and is deleted at exit).",
)  # fmt: skip
@click.option("--topic", "-t", metavar="TOPIC", help="Consume this topic.")
@click.option("--whitelist", metavar="REGEX", help="Consume every topic whose whole name matches (now or later).")
@click.option("--blacklist", metavar="REGEX", help="Consume every topic whose name does not match.")
@click.option("--streams", type=click.IntRange(min=1), default=1, show_default=True, help="Streams (threads).")
@click.option(
    "--from-beginning", is_flag=True, help="Where the group has no offset, start at the oldest record (else newest)."
)
@click.option(
    "--consumer-property",
    multiple=True,
    type=KeyValue("auto.commit.interval.ms=1000"),
    metavar="KEY=VALUE",
    help="Legacy consumer property; repeatable.",
)
@click.option(
    "--consumer.config",
    "consumer_config",
    metavar="FILE",
    help="Legacy consumer .properties file; its zookeeper.connect and group.id stand in for -z and -g (options win).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: the value (see --property); json: one object per record with topic, partition, offset, thread, "
    "key, value (or key_b64/value_b64 when not UTF-8) and timestamp.",
)
@click.option(
    "--property",
    "formatter_properties",
    multiple=True,
    type=KeyValue("print.key=true"),
    metavar="KEY=VALUE",
    help="Text formatter property as kafka-console-consumer's: print.key, print.value, print.partition, "
    "print.offset, print.timestamp, key.separator, null.literal; repeatable.",
)
@click.option("--max-messages", type=click.IntRange(min=1), metavar="N", help="Stop after N records in total.")
@click.option(
    "--timeout-ms", type=click.IntRange(min=1), metavar="MS", help="Stop after MS milliseconds without a record."
)
@click.option(
    "--partition", type=click.IntRange(min=0), metavar="P",
    help="Read only this partition of --topic, directly from the brokers: no group, nothing committed.",
)  # fmt: skip
@click.option(
    "--offset", default="latest", show_default=True, metavar="earliest|latest|N",
    help="With --partition: where to start.",
)  # fmt: skip
@click.option("--migration", is_flag=True, help="Run as a KIP-125 bridge (needs --bootstrap-server).")
@click.option("--metrics-port", type=click.IntRange(1, 65535), metavar="PORT", help="Serve Prometheus /metrics.")
def console_consumer_cmd(
    conn: Connection,
    group: str | None,
    topic: str | None,
    whitelist: str | None,
    blacklist: str | None,
    streams: int,
    from_beginning: bool,
    consumer_property: tuple[tuple[str, str], ...],
    consumer_config: str | None,
    fmt: str,
    formatter_properties: tuple[tuple[str, str], ...],
    max_messages: int | None,
    timeout_ms: int | None,
    partition: int | None,
    offset: str,
    migration: bool,
    metrics_port: int | None,
) -> int:
    """Print a topic's records as a member of a ZooKeeper-coordinated group (optionally a bridge).

    Exactly the printed records count as processed: on --max-messages, SIGTERM or SIGINT the group's
    offsets are committed up to the last printed record and the member leaves cleanly (exit 0), so a
    second run of the same group continues with the next record. Records go to stdout, one line each;
    everything else goes to stderr. It runs until stopped, like kafka-console-consumer (an empty topic
    or another member leaving does not end it), unless --max-messages or --timeout-ms (or a
    consumer.timeout.ms property: that long without a record) ends it first. Without -g and without
    group.id in --consumer.config it joins a throwaway group that commits nothing. --partition reads one
    partition straight from the brokers (-b, else /brokers/ids), as kafka-console-consumer does.

    \b
    Example:
      migrator console-consumer -z 127.0.0.1:2181 -g audit -t orders --from-beginning --max-messages 10
      migrator console-consumer --consumer.config consumer.properties -t orders --property print.key=true
      migrator console-consumer -z 127.0.0.1:2181 -g orders --whitelist 'orders\\..*' --streams 4 \\
          --migration -b 127.0.0.1:9092 --format json --metrics-port 9464
    """
    selection = topic_selection(topic, whitelist, blacklist)
    printer = Printer(text_formatter(dict(formatter_properties)) if fmt == "text" else FORMATTERS[fmt])
    if partition is not None:
        if not isinstance(selection, str):
            raise UsageError("--partition needs --topic")
        start = parse_start_offset(offset, from_beginning)
        return consume_partition(conn, selection, partition, start, printer, max_messages, timeout_ms)
    options = Options(
        conn, group, from_beginning, dict(consumer_property), consumer_config,
        migration, metrics_port, timeout_ms,
    )  # fmt: skip
    return _consume_in_group(options, selection, streams, printer, max_messages)


def _consume_in_group(
    options: Options, selection: str | TopicFilter, n_streams: int, printer: Printer, max_messages: int | None
) -> int:
    """A run as a member of the group (a throwaway one, deleted at the end, when none is named)."""
    config, idle_ms = build_config(options)
    if options.metrics_port is not None:
        check_port_free(options.metrics_port)
    _quiet_libraries()
    throwaway = options.group is None and not _file_properties(options).get("group.id")
    try:
        return _consume(config, selection, n_streams, printer, max_messages, idle_ms, commit=not throwaway)
    finally:
        if throwaway:
            delete_group(config)


class _StartInterrupted(BaseException):
    """SIGTERM or SIGINT while the connector starts (raised by the signal handler, like KeyboardInterrupt)."""


class _Signals:
    """SIGTERM and SIGINT during a run: the first asks the run to stop cleanly (while a bridge starts, it stops
    the start instead), a second interrupts at once."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.run: ConsoleRun | None = None
        self.starting = False

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if resent_outside_kazoo(signum):
            return
        if self.received:  # a second signal: the operator does not want to wait for the clean shutdown
            raise KeyboardInterrupt
        self.received.append(signum)
        if self.run is not None:
            self.run.signalled = True
        elif self.starting:  # a bridge may wait for Kafka while it starts: stop waiting, shut down (bounded)
            raise _StartInterrupted

    @contextmanager
    def installed(self) -> Iterator[None]:
        previous = {s: signal.signal(s, self.handle) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)


def _open_streams(
    connector: ConsumerConnector, selection: str | TopicFilter, n_streams: int, signals: _Signals
) -> list[KafkaStream] | None:
    """The connector's streams; None when a signal stopped the start (the connector is then shut down)."""
    signals.starting = True
    try:
        if isinstance(selection, str):
            return connector.create_message_streams({selection: n_streams})[selection]
        return connector.create_message_streams_by_filter(selection, n_streams)
    except _StartInterrupted:
        log.warning("console-consumer: signalled while starting; shutting down")
        connector.shutdown()
        return None
    finally:
        signals.starting = False


def _abandon(connector: ConsumerConnector, result: RunResult, commit: bool) -> NoReturn:
    """Leave like a crash: the connector cannot release a partition whose record is held unprocessed (its
    rebalance would wait forever), so what was printed is committed and the session expires."""
    if commit:
        connector.commit_offsets()  # the records the other threads (and earlier this one) printed
    click.echo(f"error: {result.errors[0]}; committed the printed records, exiting without release", err=True)
    sys.stderr.flush()
    os._exit(EXIT_FAILED)


def _consume(
    config: ConsumerConfig,
    selection: str | TopicFilter,
    n_streams: int,
    printer: Printer,
    max_messages: int | None,
    idle_ms: int | None,
    *,
    commit: bool = True,
) -> int:
    signals = _Signals()
    with signals.installed():
        connector = ConsumerConnector(config)
        try:
            streams = _open_streams(connector, selection, n_streams, signals)
            if streams is None:
                return EXIT_OK
            signals.run = ConsoleRun(connector, streams, printer, max_messages, idle_ms, commit=commit)
            signals.run.signalled = bool(signals.received)
            result = signals.run.run()
        except BaseException:
            connector.shutdown()
            raise
        if result.abandoned:
            _abandon(connector, result, commit)
        connector.shutdown()
    if result.errors:
        raise MigratorError("; ".join(result.errors))
    log.info("console-consumer: %d records printed (%s)", result.printed, result.reason)
    return EXIT_OK


commands: list[click.Command] = [console_consumer_cmd]
