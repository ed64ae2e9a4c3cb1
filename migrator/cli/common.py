"""Options every operator command shares, and one way to open (and always close) its connections.

Names, connect strings and identities are validated while the command line is parsed, before any
connection is opened, so a bad value can never reach ZooKeeper. Library chatter (kazoo reconnect
warnings, librdkafka connection errors) is silenced unless `--debug`: an operator sees one line saying
what failed.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click
from confluent_kafka import KafkaException

from migrator.config import load_properties
from migrator.errors import ConfigError, MigratorError, NotAuthorised, NotFound, UsageError
from migrator.kafka.admin import KafkaAdmin
from migrator.logs import LIBRDKAFKA_LOGGER
from migrator.names import validate_group
from migrator.ops.groups import require_exists
from migrator.protocol.group_view import GroupView
from migrator.zk.brokers import registered_brokers
from migrator.zk.client import (
    AUTH_FORMS,
    DEFAULT_CONNECT_TIMEOUT_S,
    ZkTls,
    auth_problem,
    chroot_of,
    connect,
    connect_problem,
    identity_of,
    is_zk_tls_key,
    normalise_connect,
    zk_tls,
)
from migrator.zk.errors import ConnectionLoss, NoAuthError, SessionExpiredError, ZooKeeperError
from migrator.zk.group_reader import published_bootstrap
from migrator.zk.paths import GroupPaths
from migrator.zk.session import ZkSession, close, exists

F = TypeVar("F", bound=Callable[..., Any])


def _group(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    return None if value is None else validate_group(value)


def checked_connect_string(value: str) -> str:
    """Checked before connecting: kazoo would fail on a bad port only when it connects, with a traceback."""
    problem = connect_problem(value)
    if problem is not None:
        raise UsageError(f"--zookeeper: {problem}")
    return normalise_connect(value)


def check_zk_auth(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """The option's own words: `zookeeper.auth` is a connector property the operator never typed."""
    return checked_zk_auth(value)


def checked_zk_auth(value: str | None) -> str | None:
    if value is not None and auth_problem(value) is not None:
        scheme = value.split(":", 1)[0]
        raise UsageError(f"--zk-auth: expected one of {AUTH_FORMS}, not {scheme!r}:…")
    return value


class KeyValue(click.ParamType):
    """A `key=value` option value, as a (key, value) pair: the key is stripped, the value kept verbatim.

    A bad value raises `UsageError` (not click's BadParameter) so the line reads like every other option
    mistake: `error: --kafka-property 'novalue': expected key=value, e.g. ...`, exit 2.
    """

    name = "key=value"

    def __init__(self, example: str) -> None:
        self.example = example

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, str]:
        if isinstance(value, tuple):
            return value
        key, sep, text = str(value).partition("=")
        if not sep or not key.strip():
            option = param.opts[0] if param is not None and param.opts else "KEY=VALUE"
            raise UsageError(f"{option} {value!r}: expected key=value, e.g. {self.example}")
        return key.strip(), text


KAFKA_PROPERTY = KeyValue("security.protocol=SASL_SSL")
"""The type of every --kafka-property option; a repeated option reaches the command as `dict(pairs)`."""


def as_dict(_ctx: click.Context, _param: click.Parameter, pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """The callback of a repeated `KeyValue` option: its pairs as a dict (a later key wins)."""
    return dict(pairs)


@dataclass(frozen=True)
class Connection:
    """What the shared options say about where and how to connect."""

    zookeeper: str
    zk_auth: str | None
    bootstrap_servers: str | None
    connect_timeout_s: float
    kafka_properties: dict[str, str] = field(default_factory=dict)
    zk_tls_properties: dict[str, str] = field(default_factory=dict)
    """`zookeeper.ssl.*` of --command-config: TLS to ZooKeeper's secure client port (`zk_tls`)."""

    @property
    def zk_tls(self) -> ZkTls | None:
        return zk_tls(self.zk_tls_properties)


connect_string_option = click.option(
    "--zookeeper",
    "-z",
    envvar="MIGRATOR_ZOOKEEPER",
    metavar="HOST:PORT[,..][/chroot]",
    help="ZooKeeper connect string (also $MIGRATOR_ZOOKEEPER).",
)
ensembles_option = click.option(
    "--zookeeper",
    "-z",
    multiple=True,
    envvar="MIGRATOR_ZOOKEEPER",
    metavar="Z[;Z2...]",
    help="ZooKeeper ensembles: `;` between ensembles, `,` between hosts of one; repeatable (also $MIGRATOR_ZOOKEEPER).",
)
"""`--zookeeper` of a command that reads several ensembles; the command checks each connect string."""
zk_auth_option = click.option(
    "--zk-auth",
    metavar="digest:USER:PASSWORD",
    envvar="MIGRATOR_ZK_AUTH",
    callback=check_zk_auth,
    help="ZooKeeper identity (also from $MIGRATOR_ZK_AUTH); needed on groups protected by `acl protect`.",
)


COMMAND_CONFIG_KEYS = {
    "zookeeper.connect": "zookeeper",
    "bootstrap.servers": "bootstrap_servers",
    "zookeeper.auth": "zk_auth",
}
"""Keys of a --command-config file that stand for an option; `zookeeper.ssl.*` configure ZooKeeper TLS; every
other key is a Kafka client property."""

ENV_VARS = {
    "zookeeper": "MIGRATOR_ZOOKEEPER",
    "bootstrap_servers": "MIGRATOR_BOOTSTRAP_SERVER",
    "connect_timeout": "MIGRATOR_CONNECT_TIMEOUT",
    "command_config": "MIGRATOR_COMMAND_CONFIG",
    "zk_auth": "MIGRATOR_ZK_AUTH",
}
"""The environment variable of each connection option (an option on the command line wins)."""


def read_command_config(path: str | None) -> dict[str, str]:
    """The properties of a --command-config file (as kafka-consumer-groups' `--command-config`); {} without one."""
    if path is None:
        return {}
    try:
        return load_properties(path)
    except ConfigError as exc:
        raise UsageError(f"--command-config: {exc}") from None


def resolve_connection(
    kwargs: dict[str, Any], *, zookeeper_required: bool = True, ensembles: bool = False
) -> Connection:
    """One `Connection` from the parsed options: command line > environment > --command-config file.

    With `ensembles` the `;`-joined values of a repeated --zookeeper are passed on unchecked (the command splits
    and checks them)."""
    file = read_command_config(kwargs.pop("command_config", None))
    given = kwargs.pop("zookeeper")
    if ensembles:
        given = ";".join(given) or None
    zookeeper = given if given is not None else file.get("zookeeper.connect")
    if zookeeper is None and zookeeper_required:
        raise UsageError(
            "--zookeeper is required: give -z, $MIGRATOR_ZOOKEEPER or zookeeper.connect in --command-config"
        )
    from_file = {k: v for k, v in file.items() if k not in COMMAND_CONFIG_KEYS and not is_zk_tls_key(k)}
    tls = {k: v for k, v in file.items() if is_zk_tls_key(k)}
    try:
        zk_tls(tls)
    except ConfigError as exc:
        raise UsageError(f"--command-config: {exc}") from None
    zk_auth = kwargs.pop("zk_auth") or file.get("zookeeper.auth")
    conn = Connection(
        zookeeper=(zookeeper if ensembles else checked_connect_string(zookeeper)) if zookeeper is not None else "",
        zk_auth=checked_zk_auth(zk_auth),
        bootstrap_servers=kwargs.pop("bootstrap_servers", None) or file.get("bootstrap.servers"),
        connect_timeout_s=kwargs.pop("connect_timeout"),
        kafka_properties={**from_file, **kwargs.pop("kafka_property", {})},
        zk_tls_properties=tls,
    )
    check_kafka_properties(conn.kafka_properties)
    return conn


connect_timeout_option = click.option(
    "--connect-timeout",
    type=click.FloatRange(min=0.1),
    default=DEFAULT_CONNECT_TIMEOUT_S,
    show_default=True,
    envvar=ENV_VARS["connect_timeout"],
    metavar="SECONDS",
    help="Give up on an unreachable ZooKeeper or broker after this long.",
)
command_config_option = click.option(
    "--command-config",
    type=click.Path(dir_okay=False),
    envvar=ENV_VARS["command_config"],
    metavar="FILE",
    help="Properties file: zookeeper.connect, bootstrap.servers, zookeeper.auth, and Kafka client "
    "properties (security.protocol, sasl.*, ssl.*); options and environment variables win.",
)
bootstrap_server_option = click.option(
    "--bootstrap-server",
    "--bootstrap-servers",
    "-b",
    "bootstrap_servers",
    envvar=ENV_VARS["bootstrap_servers"],
    metavar="HOST:PORT[,..]",
    help="Kafka brokers (the group's cluster); default: the brokers registered under /brokers/ids.",
)
kafka_property_option = click.option(
    "--kafka-property",
    multiple=True,
    metavar="KEY=VALUE",
    type=KAFKA_PROPERTY,
    callback=as_dict,
    help="Client property for every Kafka connection (SASL/SSL); repeatable.",
)


def connection_options(
    *, kafka: bool = True, zookeeper_required: bool = True, ensembles: bool = False
) -> Callable[[F], F]:
    """--zookeeper, --zk-auth, --connect-timeout, --command-config and (with kafka) --bootstrap-server,
    --kafka-property, each also from its environment variable (`ENV_VARS`). `ensembles`: --zookeeper names
    several ensembles (`ensembles_option`).

    They reach the command as one `conn: Connection` argument, after the Kafka properties were checked.
    """
    first = ensembles_option if ensembles else connect_string_option
    options = [first, zk_auth_option, connect_timeout_option, command_config_option]
    if kafka:
        options += [bootstrap_server_option, kafka_property_option]

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            kwargs["conn"] = resolve_connection(kwargs, zookeeper_required=zookeeper_required, ensembles=ensembles)
            return func(*args, **kwargs)

        for option in reversed(options):
            wrapper = option(wrapper)
        # click's decorators return their own callable type, not F; the wrapper takes `func`'s options.
        return wrapper  # type: ignore[return-value]

    return decorate


group_option = click.option(
    "--group", "-g", required=True, callback=_group, metavar="GROUP", help="Consumer group (as under /consumers)."
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")


def _debug() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.find_root().params.get("debug"))


def _quiet_libraries() -> None:
    if not _debug():
        logging.getLogger("kazoo").setLevel(logging.CRITICAL)
        logging.getLogger(LIBRDKAFKA_LOGGER).setLevel(logging.CRITICAL)


def kafka_admin(
    servers: str, properties: dict[str, str], timeout_s: float, option: str = "--kafka-property"
) -> KafkaAdmin:
    """An admin client; properties librdkafka refuses when the client is made (an unknown one, SASL
    without a provider for its mechanism) are the operator's input: one line, exit 2, before any I/O."""
    props: dict[str, Any] = {"logger": logging.getLogger(LIBRDKAFKA_LOGGER), **properties}
    try:
        return KafkaAdmin(servers, props, timeout_s=timeout_s)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else exc
        reason = error.str() if hasattr(error, "str") else str(error)
        raise UsageError(f"{option}: the Kafka client refuses it: {reason}{_sasl_hint(properties)}") from exc


def _sasl_hint(properties: dict[str, str]) -> str:
    """SASL without a mechanism means GSSAPI (Kerberos), which the confluent-kafka wheels do not include."""
    if properties.get("security.protocol", "").upper().startswith("SASL") and "sasl.mechanism" not in properties:
        return " (set sasl.mechanism too: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER)"
    return ""


def make_admin(conn: Connection, bootstrap_servers: str | None = None) -> KafkaAdmin | None:
    """An admin client on `bootstrap_servers` (default: -b); None when there are none."""
    servers = bootstrap_servers or conn.bootstrap_servers
    if not servers:
        return None
    return kafka_admin(servers, conn.kafka_properties, conn.connect_timeout_s)


def check_kafka_properties(properties: dict[str, str]) -> None:
    """Refuse bad --kafka-property values even when no broker will be contacted (the client connects lazily)."""
    if properties:
        _quiet_libraries()
        kafka_admin("127.0.0.1:9", properties, 1.0)


@dataclass(frozen=True)
class Brokers:
    """The Kafka admin a command uses and where its brokers came from; `admin` None: `missing` says why."""

    admin: KafkaAdmin | None
    source: str = ""
    missing: str = ""


def find_brokers(conn: Connection, zk: ZkSession, group: str | GroupView | None = None) -> Brokers:
    """-b if given, else the brokers registered under /brokers/ids (a ZooKeeper-mode cluster), else the
    cluster the group's bridges published with their authority (their embedded members' brokers; of a group
    already read, from its view, not read again).

    A switch or an offsets write that cannot see Kafka could make dual ownership it cannot detect, so a
    command that needs Kafka refuses (or is forced) when neither is there; it never quietly skips the check.
    """
    if conn.bootstrap_servers:
        return Brokers(make_admin(conn), "--bootstrap-servers")
    found = registered_brokers(zk, conn.kafka_properties.get("security.protocol"))
    if found:
        return Brokers(make_admin(conn, found), f"/brokers/ids ({found})")
    published = published_bootstrap(zk, group) if group is not None else ""
    if published:
        return Brokers(make_admin(conn, published), f"the group's bridges ({published})")
    return Brokers(
        None,
        missing="no --bootstrap-servers given, no broker is registered under /brokers/ids and no bridge of the "
        "group published its brokers",
    )


def require_group(zk: ZkSession, group: str) -> None:
    """A group that does not exist is a typo or the wrong cluster: say so (exit 3) instead of `absent`. For a
    command that reads no more of the group than its existence (a reader checks its view: `require_exists`)."""
    require_exists(zk, GroupView(group, exists=exists(zk, GroupPaths(group).root)))


@contextmanager
def zookeeper(conn: Connection, *, auth: str | None = None) -> Iterator[ZkSession]:
    """A connected client, closed on exit; kazoo errors become one-line MigratorErrors.

    A chroot that does not exist is refused (exit 3): kazoo only warns, and every read below it would
    then say "absent" while the real group lives at the root.
    """
    _quiet_libraries()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # kazoo's missing-chroot warning: said below, in one line
        zk = connect(conn.zookeeper, auth=auth or conn.zk_auth, timeout_s=conn.connect_timeout_s, tls=conn.zk_tls)
    try:
        wanted_chroot = chroot_of(conn.zookeeper)
        if wanted_chroot and not exists(zk, "/"):
            raise NotFound(f"chroot {wanted_chroot} does not exist on ZooKeeper {conn.zookeeper}; nothing was written")
        yield zk
    except NoAuthError as exc:
        raise NotAuthorised(None, identity_of(zk)) from exc
    except (ConnectionLoss, SessionExpiredError) as exc:
        raise MigratorError(f"lost the ZooKeeper connection to {conn.zookeeper}; nothing more was written") from exc
    except ZooKeeperError as exc:
        raise MigratorError(f"ZooKeeper error: {type(exc).__name__} {exc}".strip()) from exc
    finally:
        close(zk)


def echo_json(doc: object) -> None:
    click.echo(json.dumps(doc, indent=2, sort_keys=False, default=str))


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(text: str, option: str) -> int:
    """`30m`, `90s`, `2h`, `1d`, `500ms`; a bare number is seconds."""
    match = _DURATION.match(text or "")
    if not match:
        raise UsageError(f"{option}: {text!r} is not a duration like 30s, 30m, 2h")
    return int(float(match.group(1)) * _UNITS_MS[match.group(2) or "s"])
