"""The connector's configuration: the legacy `kafka.consumer.ConsumerConfig` properties plus KIP-125 migration.

A bridge connector reads the same properties file as the legacy connector it replaces (CONTRACT §5), so
property names and defaults follow the Scala `ConsumerConfig`/`ZKConfig` of Kafka 0.8.2 to 1.1. Unlike Scala,
which only logs unknown properties, every property is checked up front: a typo such as
`auto.offset.rest` would otherwise silently run a group with the wrong reset policy during a migration.

Prefixed pass-through properties (values are handed to confluent-kafka unchanged, prefix stripped):
- `coordination.migration.<p>` → `migration_properties`, for the embedded member only;
- `fetcher.<p>` → `fetcher_properties`, for the consumer that fetches records;
- `kafka.<p>` → `kafka_properties`, for every Kafka client (admin, fetcher, embedded member), e.g. SASL/SSL.

This project's own properties: `metrics.port`, `zookeeper.auth` (`digest:user:password`, `sasl` or
`sasl:user:password`) and `migration.static.membership`.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from frozendict import frozendict

from migrator.errors import ConfigError, UsageError
from migrator.names import validate_group
from migrator.zk.client import ZK_TLS_PREFIX, ZkTls, zk_tls
from migrator.zk.connect_string import auth_problem, connect_problem, normalise_connect, split_connect

INT_MAX = 2**31 - 1
"""Legacy values are Java ints; a larger value would be rejected by the legacy connector sharing the file."""

MIGRATION_PREFIX = "coordination.migration."
FETCHER_PREFIX = "fetcher."
KAFKA_PREFIX = "kafka."

_Kind = Literal["int", "bool", "str", "enum"]
_Derive = Callable[[Mapping[str, Any]], object]


@dataclass(frozen=True, slots=True)
class Property:
    """The one definition of a property: its name, default, doc and validation. The dataclass field carries it
    (`_prop`), and the parser, the defaults, `to_properties` and the tests all read it from there."""

    name: str
    doc: str
    default: object = None  # None: optional (or required when `required`)
    derive: _Derive | None = None  # the default depends on other properties (resolved after parsing)
    required: bool = False
    minimum: int = 0
    maximum: int = INT_MAX
    choices: tuple[str, ...] = ()
    allowed: str = ""  # how to describe the allowed range in an error, when not min..max
    attr: str = ""  # filled in from the dataclass field
    kind: _Kind = "str"  # filled in from the field's type (or "enum" when `choices`)


def _prop(name: str, default: object = None, *, doc: str, **rules: Any) -> Any:
    """A `ConsumerConfig` field defined by its property; derived and required ones have no dataclass default
    (the class is keyword-only, and only `from_mapping` builds it)."""
    definition = Property(name, doc, default, **rules)
    metadata = {"property": definition}
    if definition.required or definition.derive is not None:
        return field(metadata=metadata)
    return field(default=default, metadata=metadata)


def _map() -> Any:
    """A prefixed pass-through family: empty by default, read-only. A `frozendict` rather than the stdlib's
    `MappingProxyType`, which is neither hashable nor picklable (the fleet scan ships configs to Spark)."""
    return field(default_factory=frozendict)


_LIBRDKAFKA_OWN = "Read from the legacy file and validated; librdkafka manages this itself."

_PREFIXES: dict[str, str] = {
    MIGRATION_PREFIX: "migration_properties",
    FETCHER_PREFIX: "fetcher_properties",
    KAFKA_PREFIX: "kafka_properties",
    ZK_TLS_PREFIX: "zookeeper_tls_properties",
}
_SECRET_KEY = re.compile(r"password|secret|jaas|credential|token|key\.pem|\.key$", re.IGNORECASE)
_EAGER_ASSIGNORS = ("range", "roundrobin")
_COOPERATIVE_ASSIGNOR = "cooperative-sticky"
_CLIENT_PROPERTY_HINT = re.compile(r"^(bootstrap\.servers|security\.|sasl\.|ssl\.)")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerConfig:
    """A complete, validated connector configuration; build it with `from_mapping` or `from_properties_file`.

    Each field is defined by its `Property` (`property_definitions()`). The constructor itself does not
    validate or derive defaults: it exists for `dataclasses` machinery. Derived defaults (as in Scala):
    `zookeeper.connection.timeout.ms` = session timeout, `rebalance.backoff.ms` = `zookeeper.sync.time.ms`,
    `client.id` = `group.id`, `dual.commit.enabled` = (`offsets.storage` == `kafka`).
    """

    # ZKConfig
    zookeeper_connect: str = _prop(
        "zookeeper.connect", required=True, doc="ZooKeeper hosts, optionally with a chroot (`h1:2181,h2:2181/kafka`)."
    )
    zookeeper_session_timeout_ms: int = _prop(
        "zookeeper.session.timeout.ms", 6000, minimum=1, doc="ZooKeeper session timeout."
    )
    zookeeper_connection_timeout_ms: int = _prop(
        "zookeeper.connection.timeout.ms",
        derive=lambda v: v["zookeeper_session_timeout_ms"],
        minimum=1,
        doc="How long to wait for the first ZooKeeper connection; default: the session timeout.",
    )
    zookeeper_sync_time_ms: int = _prop(
        "zookeeper.sync.time.ms",
        2000,
        doc="How far a ZooKeeper follower may lag its leader; the default of rebalance.backoff.ms.",
    )
    # identity
    group_id: str = _prop("group.id", required=True, doc="The consumer group (its znodes are under /consumers).")
    consumer_id: str | None = _prop(
        "consumer.id",
        doc="Fixed part of the consumerId (`<group>_<consumer.id>`); default: host, time, random suffix.",
    )
    client_id: str = _prop(
        "client.id", derive=lambda v: v["group_id"], doc="Client id for Kafka requests; default: the group.id."
    )
    # fetching
    socket_timeout_ms: int = _prop(
        "socket.timeout.ms",
        30000,
        minimum=1,
        doc="Network request timeout of the record fetcher (librdkafka's socket.timeout.ms); fetch.wait.max.ms "
        "must not exceed it.",
    )
    socket_receive_buffer_bytes: int = _prop(
        "socket.receive.buffer.bytes",
        65536,
        minimum=1,
        doc="Socket receive buffer. " + _LIBRDKAFKA_OWN,
    )
    fetch_message_max_bytes: int = _prop(
        "fetch.message.max.bytes",
        1048576,
        minimum=1,
        doc="Bytes fetched per partition per request (librdkafka `max.partition.fetch.bytes`).",
    )
    num_consumer_fetchers: int = _prop(
        "num.consumer.fetchers",
        1,
        minimum=1,
        doc="Fetcher threads. " + _LIBRDKAFKA_OWN,
    )
    fetch_min_bytes: int = _prop("fetch.min.bytes", 1, doc="The broker answers a fetch once it has this much.")
    fetch_wait_max_ms: int = _prop(
        "fetch.wait.max.ms", 100, doc="The broker answers a fetch after this long even with less data."
    )
    queued_max_message_chunks: int = _prop(
        "queued.max.message.chunks",
        2,
        minimum=1,
        doc="Chunks buffered per stream. " + _LIBRDKAFKA_OWN,
    )
    refresh_leader_backoff_ms: int = _prop(
        "refresh.leader.backoff.ms",
        200,
        doc="Wait before looking for a new leader. " + _LIBRDKAFKA_OWN,
    )
    # offsets
    auto_commit_enable: bool = _prop("auto.commit.enable", True, doc="Commit consumed offsets periodically.")
    auto_commit_interval_ms: int = _prop(
        "auto.commit.interval.ms", 60000, minimum=1, doc="Period of the automatic commit."
    )
    auto_offset_reset: str = _prop(
        "auto.offset.reset",
        "largest",
        choices=("smallest", "largest"),
        doc="Where to start a partition that has no committed offset.",
    )
    offsets_storage: str = _prop(
        "offsets.storage", "zookeeper", choices=("zookeeper", "kafka"), doc="Where offsets are committed."
    )
    offsets_channel_backoff_ms: int = _prop(
        "offsets.channel.backoff.ms", 1000, doc="Wait before retrying an offsets request to Kafka."
    )
    offsets_channel_socket_timeout_ms: int = _prop(
        "offsets.channel.socket.timeout.ms", 10000, minimum=1, doc="Timeout of an offsets request to Kafka."
    )
    offsets_commit_max_retries: int = _prop(
        "offsets.commit.max.retries",
        5,
        doc="Retries of a failed offset commit. A bridge's periodic commit that Kafka refused because a rebalance "
        "moved the group past its generation is not retried: the next commit carries those offsets.",
    )
    dual_commit_enabled: bool = _prop(
        "dual.commit.enabled",
        derive=lambda v: v["offsets_storage"] == "kafka",
        doc="Also commit to ZooKeeper while offsets.storage=kafka; default: true exactly then.",
    )
    # consumption and rebalance
    consumer_timeout_ms: int = _prop(
        "consumer.timeout.ms",
        -1,
        minimum=-1,
        allowed=f"-1 (block forever) or 0..{INT_MAX}",
        doc="A stream raises ConsumerTimeout after this long without a record; -1: never.",
    )
    rebalance_max_retries: int = _prop(
        "rebalance.max.retries", 4, minimum=1, doc="Rebalance attempts before the connector gives up."
    )
    rebalance_backoff_ms: int = _prop(
        "rebalance.backoff.ms",
        derive=lambda v: v["zookeeper_sync_time_ms"],
        doc="Wait between rebalance attempts; default: zookeeper.sync.time.ms.",
    )
    partition_assignment_strategy: str = _prop(
        "partition.assignment.strategy",
        "range",
        choices=("range", "roundrobin"),
        doc="The legacy assignor; every member of the group must use the same one.",
    )
    zookeeper_layout: str = _prop(
        "zookeeper.layout",
        "scala",
        choices=("scala", "pykafka"),
        doc="The group's ZooKeeper dialect: Scala's connector, or pykafka's BalancedConsumer (docs/pykafka.md).",
    )
    exclude_internal_topics: bool = _prop(
        "exclude.internal.topics", True, doc="Whitelists never match internal topics such as `__consumer_offsets`."
    )
    # KIP-125
    migration_enabled: bool = _prop(
        "coordination.migration.enabled", False, doc="Run as a KIP-125 bridge with an embedded Kafka member."
    )
    migration_poll_interval_ms: int = _prop(
        "coordination.migration.poll.interval.ms", 1000, minimum=1, doc="Poll period of the embedded member."
    )
    # this project's own
    metrics_port: int | None = _prop("metrics.port", maximum=65535, doc="Serve Prometheus /metrics on this port.")
    zookeeper_auth: str | None = _prop(
        "zookeeper.auth", doc="ZooKeeper identity: `digest:user:password`, `sasl` or `sasl:user:password`."
    )
    zookeeper_client_cnxn_socket: str | None = _prop(
        "zookeeper.clientCnxnSocket",
        doc="Accepted for Kafka's ZooKeeper client settings (it must name Netty for TLS there); Python needs none.",
    )
    migration_static_membership: bool = _prop(
        "migration.static.membership",
        False,
        doc="The embedded member's group.instance.id is the consumer.id (KIP-345 static membership).",
    )
    # prefixed pass-through families
    migration_properties: Mapping[str, str] = _map()
    fetcher_properties: Mapping[str, str] = _map()
    kafka_properties: Mapping[str, str] = _map()
    zookeeper_tls_properties: Mapping[str, str] = _map()
    """`zookeeper.ssl.<p>`: the ZooKeeper client's TLS, Kafka's names (`migrator.zk.client.zk_tls`)."""
    explicit_keys: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    """Property names that were set explicitly (so `with_overrides` re-derives the other defaults)."""

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, object]) -> ConsumerConfig:
        """Parse and validate `mapping` (property name → value); raise one `ConfigError` listing every
        problem (also in its `problems`), so that a file is fixed in one go. Values must be strings, integers
        or booleans; anything else is one of the problems (the public API passes user mappings through)."""
        raw = _normalise(mapping)
        values, prefixed, problems, unparsed = _parse_all(raw)
        _apply_defaults(values, unparsed, problems)
        if problems:  # the derived defaults and the cross-property checks below need every value
            raise config_error(problems)
        for spec in _SPECS:
            if spec.derive is not None and spec.attr not in values:
                values[spec.attr] = spec.derive(values)

        _check_identity(values, problems)
        _check_zookeeper(values, problems)
        _check_migration(values, prefixed, problems)
        _check_security(prefixed, problems)
        _check_zookeeper_tls(prefixed, problems)
        _check_fetch(values, problems)
        if problems:
            raise config_error(problems)
        values.update({attr: frozendict(props) for attr, props in prefixed.items()})
        return cls(**values, explicit_keys=frozenset(raw))

    @classmethod
    def from_properties_file(cls, path: str | os.PathLike[str]) -> ConsumerConfig:
        """Read a Java `.properties` file (the legacy connector's own file) and validate it; an error names
        the file."""
        props = load_properties(path)
        try:
            return cls.from_mapping(props)
        except ConfigError as exc:
            raise config_error(exc.problems, os.fspath(path)) from None

    def with_overrides(self, **props: str | int | bool | None) -> ConsumerConfig:
        """A new validated config with `props` replaced; keys are property names (`**{"group.id": "g"}`)
        or attribute names (`group_id="g"`); `None` removes a property so its default applies again.

        Defaults that derive from another property are re-derived unless they were set explicitly.
        """
        merged: dict[str, str | int | bool] = dict(self.to_properties(explicit_only=True))
        for key, value in props.items():
            name = _BY_ATTR[key].name if key in _BY_ATTR else key
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
        return ConsumerConfig.from_mapping(merged)

    # ------------------------------------------------------------------ views

    def to_properties(self, *, explicit_only: bool = False, redact: bool = False) -> dict[str, str]:
        """Property name → text, such that `from_mapping(cfg.to_properties()) == cfg`.

        `explicit_only` keeps only what was set explicitly; `redact` masks secrets for logs and `status`.
        """
        out: dict[str, str] = {}
        for spec in _SPECS:
            value = getattr(self, spec.attr)
            if value is None:
                continue
            out[spec.name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        for prefix, attr in _PREFIXES.items():
            for key, value in getattr(self, attr).items():
                out[prefix + key] = value
        if explicit_only:
            out = {k: v for k, v in out.items() if k in self.explicit_keys}
        if redact:
            out = {k: _redact(k, v) for k, v in out.items()}
        return out

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.to_properties(redact=True).items())
        return f"ConsumerConfig({shown})"

    @property
    def bootstrap_servers(self) -> str | None:
        """The Kafka brokers the embedded member (else every client) connects to, if configured."""
        return self.migration_properties.get("bootstrap.servers") or self.kafka_properties.get("bootstrap.servers")

    @property
    def security_protocol(self) -> str | None:
        """The Kafka security protocol every client uses (`_check_security` makes them agree), if configured."""
        return self.migration_properties.get("security.protocol") or self.kafka_properties.get("security.protocol")

    @property
    def zookeeper_tls(self) -> ZkTls | None:
        """TLS to ZooKeeper's secure client port (`zookeeper.ssl.client.enable=true`), else None."""
        return zk_tls({ZK_TLS_PREFIX + k: v for k, v in self.zookeeper_tls_properties.items()})

    @property
    def zookeeper_hosts(self) -> str:
        """`zookeeper.connect` without its chroot."""
        return split_connect(self.zookeeper_connect)[0]

    @property
    def zookeeper_chroot(self) -> str | None:
        """The chroot of `zookeeper.connect` (e.g. `/kafka`), or None."""
        return split_connect(self.zookeeper_connect)[1]

    @property
    def offset_reset(self) -> Literal["earliest", "latest"]:
        """`auto.offset.reset` in librdkafka's words: where a partition without a committed offset starts."""
        return "earliest" if self.auto_offset_reset == "smallest" else "latest"

    def embedded_member_properties(self, consumer_id: str) -> dict[str, str]:
        """confluent-kafka settings of the embedded member of the connector whose consumerId is `consumer_id`:
        `kafka.*`, then `coordination.migration.*` (more specific wins), then what CONTRACT §5 fixes: the
        connector's group, `client.id` = consumerId (how bridges are recognised in DescribeGroups), no auto
        commit, and `group.instance.id` = consumer.id when static membership is on (validation demands a
        consumer.id then; the consumerId is only a fallback for a config that skipped validation).

        Unless set, librdkafka's `socket.timeout.ms` and `topic.metadata.refresh.interval.ms` are both
        `offsets.channel.socket.timeout.ms`, the bound of every other group request of the connector, so a
        member started while no broker answers joins within about that time once one does, not at librdkafka's
        next periodic metadata refresh (5 min by default; docs/history.md, "A bridge started during a broker
        outage joins minutes late").
        """
        bound = str(self.offsets_channel_socket_timeout_ms)
        props = {"socket.timeout.ms": bound, "topic.metadata.refresh.interval.ms": bound}
        props |= {**self.kafka_properties, **self.migration_properties}
        props["group.id"] = self.group_id
        props["client.id"] = consumer_id
        props["enable.auto.commit"] = "false"
        if self.migration_static_membership:
            props["group.instance.id"] = self.consumer_id or consumer_id
        return props

    def fetcher_client_properties(self) -> dict[str, str]:
        """Properties for the record fetcher: `kafka.*`, then `fetcher.*` (more specific wins)."""
        return {**self.kafka_properties, **self.fetcher_properties}


def _kind(definition: Property, hint: object) -> _Kind:
    """The parser of a field: its choices make it an enum, else its type (without `| None`) decides."""
    if definition.choices:
        return "enum"
    base = next(arg for arg in (typing.get_args(hint) or (hint,)) if arg is not type(None))
    kinds: dict[object, _Kind] = {int: "int", bool: "bool", str: "str"}
    return kinds[base]


def property_definitions() -> tuple[Property, ...]:
    """Every fixed property in file order, each with its attribute and parser kind filled in."""
    hints = typing.get_type_hints(ConsumerConfig)
    return tuple(
        dataclasses.replace(f.metadata["property"], attr=f.name, kind=_kind(f.metadata["property"], hints[f.name]))
        for f in dataclasses.fields(ConsumerConfig)
        if "property" in f.metadata
    )


_SPECS: tuple[Property, ...] = property_definitions()
_BY_NAME: dict[str, Property] = {s.name: s for s in _SPECS}
_BY_ATTR: dict[str, Property] = {s.attr: s for s in _SPECS}
KNOWN_PROPERTIES: tuple[str, ...] = tuple(_BY_NAME)
"""Every fixed property name (the prefixed pass-through families are open-ended)."""


# ---------------------------------------------------------------------- parsing values


def _normalise(mapping: Mapping[str, object]) -> dict[str, str]:
    if not isinstance(mapping, Mapping):
        raise ConfigError(f"configuration must be a mapping, not {type(mapping).__name__}")
    out: dict[str, str] = {}
    for key, value in mapping.items():
        if not isinstance(key, str) or not key.strip():
            raise ConfigError(f"property names must be non-empty strings, got {key!r}")
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int | str):
            text = str(value)
        else:
            raise ConfigError(f"{key}: value must be a string, integer or boolean, not {type(value).__name__}")
        out[key.strip()] = text
    return out


def _parse(spec: Property, text: str) -> object:
    value = text.strip()
    if spec.kind == "bool":
        lowered = value.lower()
        if lowered not in ("true", "false"):
            raise ConfigError(f"{spec.name}: {text!r} is not one of true, false")
        return lowered == "true"
    if spec.kind == "int":
        if not re.fullmatch(r"[+-]?[0-9]+", value):
            raise ConfigError(f"{spec.name}: {text!r} is not an integer")
        number = int(value)
        if not spec.minimum <= number <= spec.maximum:
            allowed = spec.allowed or f"{spec.minimum}..{spec.maximum}"
            raise ConfigError(f"{spec.name}: {number} is out of range; allowed {allowed}")
        return number
    if spec.kind == "enum":
        # Scala lower-cases offsets.storage only; the other enums are case-sensitive there too.
        candidate = value.lower() if spec.name == "offsets.storage" else value
        if candidate not in spec.choices:
            raise ConfigError(f"{spec.name}: {text!r} is not one of {', '.join(spec.choices)}")
        return candidate
    if not value:
        raise ConfigError(f"{spec.name}: must not be empty")
    return value


def config_error(problems: Sequence[str], source: str | None = None) -> ConfigError:
    """One error for all `problems`, on one line (what the CLI prints after `error: `)."""
    where = f"{source}: " if source else ""
    count = f"{len(problems)} problems: " if len(problems) > 1 else ""
    error = ConfigError(f"{where}{count}{'; '.join(problems)}")
    error.problems = tuple(problems)
    return error


def _unknown_message(names: list[str]) -> str:
    parts = []
    for name in names:
        if _CLIENT_PROPERTY_HINT.match(name):
            hint = f"{KAFKA_PREFIX}{name}' or '{MIGRATION_PREFIX}{name}"
        else:
            close = difflib.get_close_matches(name, KNOWN_PROPERTIES, n=1, cutoff=0.75)
            hint = close[0] if close else ""
        parts.append(f"{name!r} (did you mean '{hint}'?)" if hint else repr(name))
    noun = "property" if len(names) == 1 else "properties"
    return f"unknown {noun} {', '.join(parts)}"


def _redact(key: str, value: str) -> str:
    if key == "zookeeper.auth":
        scheme, sep, rest = value.partition(":")
        user = rest.partition(":")[0]
        return f"{scheme}:{user}:***" if sep else value
    return "***" if _SECRET_KEY.search(key) else value


# ---------------------------------------------------------------------- cross-property checks


def _check_zookeeper(values: dict[str, Any], problems: list[str]) -> None:
    """Validate `zookeeper.connect` (normalising spaces around hosts) and `zookeeper.auth`."""
    connect: str = values["zookeeper_connect"]
    problem = connect_problem(connect)
    if problem is not None:
        problems.append(f"zookeeper.connect: {problem}")
    else:
        values["zookeeper_connect"] = normalise_connect(connect)

    auth: str | None = values.get("zookeeper_auth")
    if auth is not None and (problem := auth_problem(auth)) is not None:
        problems.append(f"zookeeper.auth: {problem}")


def _parse_all(raw: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, dict[str, str]], list[str], set[str]]:
    """Each known property parsed onto its field, each prefixed one into its family; also the problems, and
    the names set to an invalid value (no "is required" or default is added on top of their problem)."""
    values: dict[str, Any] = {}
    prefixed: dict[str, dict[str, str]] = {attr: {} for attr in _PREFIXES.values()}
    unknown: list[str] = []
    problems: list[str] = []
    unparsed: set[str] = set()
    for name, text in raw.items():
        spec = _BY_NAME.get(name)
        if spec is not None:
            try:
                values[spec.attr] = _parse(spec, text)
            except ConfigError as exc:
                problems.append(str(exc))
                unparsed.add(spec.name)
            continue
        prefix = next((p for p in _PREFIXES if name.startswith(p)), None)
        if prefix is None:
            unknown.append(name)
        elif name == prefix:
            problems.append(f"{name}: a property name is missing after the prefix {prefix!r}")
        else:
            prefixed[_PREFIXES[prefix]][name[len(prefix) :]] = text
    if unknown:
        problems.append(_unknown_message(sorted(unknown)))
    return values, prefixed, problems, unparsed


def _apply_defaults(values: dict[str, Any], unparsed: set[str], problems: list[str]) -> None:
    """The plain defaults of the properties not set; a required one not set is a problem. Derived defaults
    wait until every other value is known."""
    for spec in _SPECS:
        if spec.attr in values or spec.name in unparsed:
            continue
        if spec.required:
            problems.append(f"{spec.name} is required")
        elif spec.derive is None:
            values[spec.attr] = spec.default


def _check_zookeeper_tls(prefixed: dict[str, dict[str, str]], problems: list[str]) -> None:
    try:
        zk_tls({ZK_TLS_PREFIX + k: v for k, v in prefixed["zookeeper_tls_properties"].items()})
    except ConfigError as exc:
        problems.extend(exc.problems)


def _check_identity(values: dict[str, Any], problems: list[str]) -> None:
    group_ok = True
    try:
        validate_group(values["group_id"])
    except UsageError as exc:
        problems.append(f"group.id: {exc}")
        group_ok = False
    consumer_id: str | None = values.get("consumer_id")
    if consumer_id is not None and "/" in consumer_id:
        problems.append(f"consumer.id: {consumer_id!r} contains '/', which would break the znode path")
    client_id: str = values["client_id"]
    derived_from_bad_group = client_id == values["group_id"] and not group_ok
    if not derived_from_bad_group and client_id:
        try:
            validate_group(client_id, kind="client.id")
        except UsageError as exc:
            problems.append(f"client.id: {exc}")


def _check_fetch(values: Mapping[str, Any], problems: list[str]) -> None:
    """The fetcher's wait for data must end before its socket times out."""
    if values["fetch_wait_max_ms"] > values["socket_timeout_ms"]:
        problems.append(
            f"fetch.wait.max.ms: {values['fetch_wait_max_ms']} exceeds socket.timeout.ms "
            f"({values['socket_timeout_ms']}); it must be at most the socket timeout, or every idle "
            "fetch would time out"
        )


def _check_migration(values: dict[str, Any], prefixed: dict[str, dict[str, str]], problems: list[str]) -> None:
    migration = prefixed["migration_properties"]
    kafka = prefixed["kafka_properties"]
    # Both families reach the embedded member, so the same rules apply to both.
    for prefix, props in ((MIGRATION_PREFIX, migration), (KAFKA_PREFIX, kafka)):
        if "group.id" in props:
            problems.append(
                f"{prefix}group.id: not allowed; the embedded member always joins the connector's "
                f"group.id ({values['group_id']}), or the two coordination systems would manage different groups"
            )
        if "client.id" in props:
            problems.append(
                f"{prefix}client.id: not allowed; the embedded member's client.id is the connector's "
                "consumerId, which is how bridges are recognised in the Kafka group (CONTRACT §5)"
            )
        if props.get("enable.auto.commit", "false").strip().lower() != "false":
            problems.append(
                f"{prefix}enable.auto.commit: only false is allowed; the embedded member never commits on "
                "its own (offsets are committed by the connector, through the member's generation)"
            )
        strategy = props.get("partition.assignment.strategy")
        if strategy is not None and not _embedded_assignors_ok(strategy):
            problems.append(
                f"{prefix}partition.assignment.strategy: {strategy!r} is neither a comma list of range, "
                f"roundrobin (eager) nor {_COOPERATIVE_ASSIGNOR} alone (cooperative); a client cannot offer "
                "both rebalance protocols"
            )
    if values["migration_static_membership"] and ("group.instance.id" in migration or "group.instance.id" in kafka):
        problems.append(
            "migration.static.membership: cannot be combined with an explicit group.instance.id; "
            "static membership derives it from the consumer id"
        )
    if values["migration_enabled"] and values["migration_static_membership"] and not values.get("consumer_id"):
        problems.append(
            "migration.static.membership: requires consumer.id; the embedded member's group.instance.id is "
            "the consumer.id, and without one every start would generate a new id, so each restart would "
            "leave a departed static member holding its partitions until its session times out"
        )
    if values["migration_enabled"] and not (migration.get("bootstrap.servers") or kafka.get("bootstrap.servers")):
        problems.append(
            f"{MIGRATION_PREFIX}bootstrap.servers is required when {MIGRATION_PREFIX}enabled=true "
            f"(or set {KAFKA_PREFIX}bootstrap.servers for every Kafka client)"
        )


def _embedded_assignors_ok(strategy: str) -> bool:
    """The assignors an embedded member may offer: eager ones, or the cooperative one alone (librdkafka
    refuses a list that mixes the two protocols)."""
    items = [s.strip() for s in strategy.split(",")]
    if items == [_COOPERATIVE_ASSIGNOR]:
        return True
    return all(items) and all(s in _EAGER_ASSIGNORS for s in items)


_SECURITY_PROPERTY = re.compile(r"^(security\.protocol|sasl\.|ssl\.)")


def _check_security(prefixed: dict[str, dict[str, str]], problems: list[str]) -> None:
    """Security is set once, as `kafka.<p>`, which reaches every client. A security property under
    `coordination.migration.` or `fetcher.` reaches only one client, so unless it repeats the `kafka.` value
    the admin client, the fetcher and the embedded member would connect differently: a bridge could join the
    Kafka group and own partitions it can never fetch or read offsets for."""
    kafka = prefixed["kafka_properties"]
    for prefix, attr, client in (
        (MIGRATION_PREFIX, "migration_properties", "the embedded member"),
        (FETCHER_PREFIX, "fetcher_properties", "the fetcher"),
    ):
        for key, value in sorted(prefixed[attr].items()):
            if _SECURITY_PROPERTY.match(key) and kafka.get(key) != value:
                shared = f"{KAFKA_PREFIX}{key}={kafka[key]}" if key in kafka else f"no {KAFKA_PREFIX}{key}"
                problems.append(
                    f"{prefix}{key} reaches only {client}, and {shared} for the other Kafka clients: the "
                    f"clients would disagree on security; set it once as {KAFKA_PREFIX}{key} (docs/security.md)"
                )


# ---------------------------------------------------------------------- .properties files


def load_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a Java `.properties` file; UTF-8, falling back to ISO-8859-1 as `java.util.Properties` uses."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ConfigError(f"cannot read properties file {os.fspath(path)}: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return parse_properties(text)


def parse_properties(text: str) -> dict[str, str]:
    """Parse `.properties` text as `java.util.Properties.load` does (javaproperties), the last duplicate
    winning, with one deliberate difference: unescaped trailing whitespace of a value is dropped, because
    it is a frequent, invisible mistake (`group.id=orders ` would name another group); write `\\ ` to keep
    a trailing space.

    javaproperties is imported here, not with the module: it brings in an XML parser (~1 MiB of a connector's
    memory) that an application configured from a dict never uses.
    """
    import javaproperties

    try:
        return javaproperties.loads(_drop_trailing_whitespace(text), object_pairs_hook=dict)
    except javaproperties.InvalidUEscapeError as exc:
        raise ConfigError(f"properties: malformed \\uXXXX escape: {exc}") from None


_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")


def _drop_trailing_whitespace(text: str) -> str:
    """Strip whitespace at the end of every physical line, except one escaped by a backslash (an odd number
    of backslashes before it). A value's end is always the end of a physical line, and a line ending in
    whitespace never continues, so this changes nothing else."""
    parts = _LINE_BREAK.split(text)  # lines at even indexes, their breaks at odd ones
    for i in range(0, len(parts), 2):
        line = parts[i]
        kept = line.rstrip()
        if kept != line and (len(kept) - len(kept.rstrip("\\"))) % 2 == 1:
            kept = line[: len(kept) + 1]
        parts[i] = kept
    return "".join(parts)
