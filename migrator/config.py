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

import difflib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from migrator.errors import ConfigError, UsageError
from migrator.names import validate_group
from migrator.zk.client import auth_problem, connect_problem, normalise_connect

INT_MAX = 2**31 - 1
"""Legacy values are Java ints; a larger value would be rejected by the legacy connector sharing the file."""

MIGRATION_PREFIX = "coordination.migration."
FETCHER_PREFIX = "fetcher."
KAFKA_PREFIX = "kafka."

_Kind = Literal["int", "bool", "str", "enum"]


class _Derived:
    """Marker: the default depends on another property (resolved after parsing)."""

    __slots__ = ("source",)

    def __init__(self, source: str) -> None:
        self.source = source


@dataclass(frozen=True, slots=True)
class _Spec:
    name: str
    attr: str
    kind: _Kind
    default: object = None  # None: optional (or required when `required`); _Derived: from another property
    required: bool = False
    minimum: int = 0
    maximum: int = INT_MAX
    choices: tuple[str, ...] = ()
    allowed: str = ""  # how to describe the allowed range in an error, when not min..max


_SPECS: tuple[_Spec, ...] = (
    # ZKConfig
    _Spec("zookeeper.connect", "zookeeper_connect", "str", required=True),
    _Spec("zookeeper.session.timeout.ms", "zookeeper_session_timeout_ms", "int", 6000, minimum=1),
    _Spec(
        "zookeeper.connection.timeout.ms",
        "zookeeper_connection_timeout_ms",
        "int",
        _Derived("zookeeper.session.timeout.ms"),
        minimum=1,
    ),
    _Spec("zookeeper.sync.time.ms", "zookeeper_sync_time_ms", "int", 2000),
    # identity
    _Spec("group.id", "group_id", "str", required=True),
    _Spec("consumer.id", "consumer_id", "str"),
    _Spec("client.id", "client_id", "str", _Derived("group.id")),
    # fetching
    _Spec("socket.timeout.ms", "socket_timeout_ms", "int", 30000, minimum=1),
    _Spec("socket.receive.buffer.bytes", "socket_receive_buffer_bytes", "int", 65536, minimum=1),
    _Spec("fetch.message.max.bytes", "fetch_message_max_bytes", "int", 1048576, minimum=1),
    _Spec("num.consumer.fetchers", "num_consumer_fetchers", "int", 1, minimum=1),
    _Spec("fetch.min.bytes", "fetch_min_bytes", "int", 1),
    _Spec("fetch.wait.max.ms", "fetch_wait_max_ms", "int", 100),
    _Spec("queued.max.message.chunks", "queued_max_message_chunks", "int", 2, minimum=1),
    _Spec("refresh.leader.backoff.ms", "refresh_leader_backoff_ms", "int", 200),
    # offsets
    _Spec("auto.commit.enable", "auto_commit_enable", "bool", True),
    _Spec("auto.commit.interval.ms", "auto_commit_interval_ms", "int", 60000, minimum=1),
    _Spec("auto.offset.reset", "auto_offset_reset", "enum", "largest", choices=("smallest", "largest")),
    _Spec("offsets.storage", "offsets_storage", "enum", "zookeeper", choices=("zookeeper", "kafka")),
    _Spec("offsets.channel.backoff.ms", "offsets_channel_backoff_ms", "int", 1000),
    _Spec("offsets.channel.socket.timeout.ms", "offsets_channel_socket_timeout_ms", "int", 10000, minimum=1),
    _Spec("offsets.commit.max.retries", "offsets_commit_max_retries", "int", 5),
    _Spec("dual.commit.enabled", "dual_commit_enabled", "bool", _Derived("offsets.storage")),
    # consumption and rebalance
    _Spec(
        "consumer.timeout.ms",
        "consumer_timeout_ms",
        "int",
        -1,
        minimum=-1,
        allowed=f"-1 (block forever) or 0..{INT_MAX}",
    ),
    _Spec("rebalance.max.retries", "rebalance_max_retries", "int", 4, minimum=1),
    _Spec("rebalance.backoff.ms", "rebalance_backoff_ms", "int", _Derived("zookeeper.sync.time.ms")),
    _Spec(
        "partition.assignment.strategy",
        "partition_assignment_strategy",
        "enum",
        "range",
        choices=("range", "roundrobin"),
    ),
    _Spec("exclude.internal.topics", "exclude_internal_topics", "bool", True),
    # KIP-125
    _Spec("coordination.migration.enabled", "migration_enabled", "bool", False),
    _Spec("coordination.migration.poll.interval.ms", "migration_poll_interval_ms", "int", 1000, minimum=1),
    # this project's own
    _Spec("metrics.port", "metrics_port", "int", None, maximum=65535),
    _Spec("zookeeper.auth", "zookeeper_auth", "str"),
    _Spec("migration.static.membership", "migration_static_membership", "bool", False),
)

_BY_NAME: dict[str, _Spec] = {s.name: s for s in _SPECS}
_BY_ATTR: dict[str, _Spec] = {s.attr: s for s in _SPECS}
_PREFIXES: dict[str, str] = {
    MIGRATION_PREFIX: "migration_properties",
    FETCHER_PREFIX: "fetcher_properties",
    KAFKA_PREFIX: "kafka_properties",
}
KNOWN_PROPERTIES: tuple[str, ...] = tuple(_BY_NAME)
"""Every fixed property name (the prefixed pass-through families are open-ended)."""

_SECRET_KEY = re.compile(r"password|secret|jaas|credential|token|key\.pem|\.key$", re.IGNORECASE)
_EMBEDDED_ASSIGNORS = ("range", "roundrobin")
_CLIENT_PROPERTY_HINT = re.compile(r"^(bootstrap\.servers|security\.|sasl\.|ssl\.)")


class FrozenMap(Mapping[str, str]):
    """A read-only, hashable, picklable str→str mapping (MappingProxyType is neither hashable nor picklable,
    and configs are shipped to Spark executors by the fleet scan)."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, str] | None = None) -> None:
        object.__setattr__(self, "_data", dict(data or {}))

    def __getitem__(self, key: str) -> str:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._data == dict(other.items())
        return NotImplemented

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("FrozenMap is immutable")

    def __reduce__(self) -> tuple[type[FrozenMap], tuple[dict[str, str]]]:
        return (FrozenMap, (self._data,))

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    """A complete, validated connector configuration; build it with `from_mapping` or `from_properties_file`.

    The constructor itself does not validate or derive defaults: it exists for `dataclasses` machinery.
    Derived defaults (as in Scala): `zookeeper.connection.timeout.ms` = session timeout,
    `rebalance.backoff.ms` = `zookeeper.sync.time.ms`, `client.id` = `group.id`,
    `dual.commit.enabled` = (`offsets.storage` == `kafka`).
    """

    zookeeper_connect: str
    group_id: str
    zookeeper_session_timeout_ms: int = 6000
    zookeeper_connection_timeout_ms: int = 6000
    zookeeper_sync_time_ms: int = 2000
    consumer_id: str | None = None
    client_id: str = ""
    socket_timeout_ms: int = 30000
    socket_receive_buffer_bytes: int = 65536
    fetch_message_max_bytes: int = 1048576
    num_consumer_fetchers: int = 1
    fetch_min_bytes: int = 1
    fetch_wait_max_ms: int = 100
    queued_max_message_chunks: int = 2
    refresh_leader_backoff_ms: int = 200
    auto_commit_enable: bool = True
    auto_commit_interval_ms: int = 60000
    auto_offset_reset: str = "largest"
    offsets_storage: str = "zookeeper"
    offsets_channel_backoff_ms: int = 1000
    offsets_channel_socket_timeout_ms: int = 10000
    offsets_commit_max_retries: int = 5
    dual_commit_enabled: bool = False
    consumer_timeout_ms: int = -1
    rebalance_max_retries: int = 4
    rebalance_backoff_ms: int = 2000
    partition_assignment_strategy: str = "range"
    exclude_internal_topics: bool = True
    migration_enabled: bool = False
    migration_poll_interval_ms: int = 1000
    migration_properties: Mapping[str, str] = field(default_factory=FrozenMap)
    fetcher_properties: Mapping[str, str] = field(default_factory=FrozenMap)
    kafka_properties: Mapping[str, str] = field(default_factory=FrozenMap)
    metrics_port: int | None = None
    zookeeper_auth: str | None = None
    migration_static_membership: bool = False
    explicit_keys: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    """Property names that were set explicitly (so `with_overrides` re-derives the other defaults)."""

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, str | int | bool]) -> ConsumerConfig:
        """Parse and validate `mapping` (property name → value); raise one `ConfigError` listing every
        problem (also in its `problems`), so that a file is fixed in one go."""
        raw = _normalise(mapping)
        values: dict[str, Any] = {}
        prefixed: dict[str, dict[str, str]] = {attr: {} for attr in _PREFIXES.values()}
        unknown: list[str] = []
        problems: list[str] = []
        for name, text in raw.items():
            spec = _BY_NAME.get(name)
            if spec is not None:
                try:
                    values[spec.attr] = _parse(spec, text)
                except ConfigError as exc:
                    problems.append(str(exc))
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

        for spec in _SPECS:
            if spec.attr in values or any(p.startswith(f"{spec.name}:") for p in problems):
                continue
            if spec.required:
                problems.append(f"{spec.name} is required")
            elif not isinstance(spec.default, _Derived):
                values[spec.attr] = spec.default
        if problems:  # the cross-property checks below need every value
            raise config_error(problems)
        values.setdefault("zookeeper_connection_timeout_ms", values["zookeeper_session_timeout_ms"])
        values.setdefault("rebalance_backoff_ms", values["zookeeper_sync_time_ms"])
        values.setdefault("client_id", values["group_id"])
        values.setdefault("dual_commit_enabled", values["offsets_storage"] == "kafka")

        _check_identity(values, problems)
        _check_zookeeper(values, problems)
        _check_migration(values, prefixed, problems)
        if values["fetch_wait_max_ms"] > values["socket_timeout_ms"]:
            problems.append(
                f"fetch.wait.max.ms: {values['fetch_wait_max_ms']} exceeds socket.timeout.ms "
                f"({values['socket_timeout_ms']}); it must be at most the socket timeout, or every idle "
                "fetch would time out"
            )
        if problems:
            raise config_error(problems)
        return cls(
            **values,
            **{attr: FrozenMap(props) for attr, props in prefixed.items()},
            explicit_keys=frozenset(raw),
        )

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
    def zookeeper_hosts(self) -> str:
        """`zookeeper.connect` without its chroot."""
        return self.zookeeper_connect.split("/", 1)[0]

    @property
    def zookeeper_chroot(self) -> str | None:
        """The chroot of `zookeeper.connect` (e.g. `/kafka`), or None."""
        _, slash, chroot = self.zookeeper_connect.partition("/")
        return "/" + chroot if slash else None

    def embedded_member_properties(self, consumer_id: str) -> dict[str, str]:
        """confluent-kafka settings of the embedded member of the connector whose consumerId is `consumer_id`:
        `kafka.*`, then `coordination.migration.*` (more specific wins), then what CONTRACT §5 fixes: the
        connector's group, `client.id` = consumerId (how bridges are recognised in DescribeGroups), no auto
        commit, and `group.instance.id` = consumer.id when static membership is on (validation demands a
        consumer.id then; the consumerId is only a fallback for a config that skipped validation).
        """
        props = {**self.kafka_properties, **self.migration_properties}
        props["group.id"] = self.group_id
        props["client.id"] = consumer_id
        props["enable.auto.commit"] = "false"
        if self.migration_static_membership:
            props["group.instance.id"] = self.consumer_id or consumer_id
        return props

    def fetcher_client_properties(self) -> dict[str, str]:
        """Properties for the record fetcher: `kafka.*`, then `fetcher.*` (more specific wins)."""
        return {**self.kafka_properties, **self.fetcher_properties}


# ---------------------------------------------------------------------- parsing values


def _normalise(mapping: Mapping[str, str | int | bool]) -> dict[str, str]:
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


def _parse(spec: _Spec, text: str) -> object:
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


def _check_identity(values: dict[str, Any], problems: list[str]) -> None:
    try:
        validate_group(values["group_id"])
    except UsageError as exc:
        problems.append(f"group.id: {exc}")
    consumer_id: str | None = values.get("consumer_id")
    if consumer_id is not None and "/" in consumer_id:
        problems.append(f"consumer.id: {consumer_id!r} contains '/', which would break the znode path")
    client_id: str = values["client_id"]
    derived_from_bad_group = client_id == values["group_id"] and problems and problems[-1].startswith("group.id:")
    if not derived_from_bad_group and not re.fullmatch(r"[a-zA-Z0-9._-]*", client_id):
        problems.append(f"client.id: {client_id!r} may contain only ASCII letters, digits, '.', '_' and '-'")


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
        if strategy is not None:
            items = [s.strip() for s in strategy.split(",")]
            if not all(items) or any(s not in _EMBEDDED_ASSIGNORS for s in items):
                problems.append(
                    f"{prefix}partition.assignment.strategy: {strategy!r} is not a comma list of "
                    "range, roundrobin; cooperative-sticky (or any incremental assignor) would change when "
                    "partitions are revoked, which the migration's release-then-claim rebalance relies on"
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
    """Parse `.properties` text as `java.util.Properties.load` does: `key=value`, `key: value` or
    `key value`; `#`/`!` comment lines; a line ending in an odd number of backslashes continues on the next
    (leading whitespace dropped); escapes `\\t \\n \\r \\f \\uXXXX` and `\\<char>`; the last duplicate wins.
    Unlike Java, unescaped trailing whitespace of a value is dropped (a frequent, invisible mistake).
    """
    out: dict[str, str] = {}
    for logical in _logical_lines(text):
        key, value = _split_entry(logical)
        out[key] = value
    return out


def _logical_lines(text: str) -> Iterator[str]:
    pending: str | None = None
    for physical in text.splitlines():
        line = physical.lstrip(" \t\f")
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        continued = trailing % 2 == 1
        if continued:
            line = line[:-1]
        pending = line if pending is None else pending + line
        if not continued:
            yield pending
            pending = None
    if pending is not None:
        yield pending


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _split_entry(line: str) -> tuple[str, str]:
    # The key ends at the first unescaped '=', ':' or whitespace.
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key_raw = line[:i]
    while i < n and line[i] in " \t\f":
        i += 1
    if i < n and line[i] in "=:":
        i += 1
        while i < n and line[i] in " \t\f":
            i += 1
    return _unescape(key_raw, trim=False), _unescape(line[i:], trim=True)


def _unescape(raw: str, *, trim: bool) -> str:
    chars: list[str] = []
    keep = 0  # length of `chars` up to the last escaped or non-whitespace character
    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch == "\\" and i + 1 < n:
            nxt = raw[i + 1]
            if nxt == "u":
                digits = raw[i + 2 : i + 6]
                if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                    raise ConfigError(f"properties: malformed \\uXXXX escape in {raw!r}")
                chars.append(chr(int(digits, 16)))
                i += 6
            else:
                chars.append(_ESCAPES.get(nxt, nxt))
                i += 2
            keep = len(chars)
            continue
        if ch != "\\":  # a lone trailing backslash is dropped, as Java does
            chars.append(ch)
            if not ch.isspace():
                keep = len(chars)
        i += 1
    return "".join(chars[:keep] if trim else chars)
