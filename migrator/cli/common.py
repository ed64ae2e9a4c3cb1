"""Options every operator command shares, and one way to open (and always close) its connections.

Names are validated while the command line is parsed, before any connection is opened, so a bad group
name can never reach ZooKeeper. Library chatter (kazoo reconnect warnings, librdkafka connection errors)
is silenced unless `--debug`: an operator sees one line saying what failed.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, KazooException, NoAuthError, SessionExpiredError

from migrator.errors import MigratorError, RefusedError, UsageError
from migrator.kafka.admin import KafkaAdmin
from migrator.logs import LIBRDKAFKA_LOGGER
from migrator.names import validate_group
from migrator.zk.client import DEFAULT_CONNECT_TIMEOUT_S, connect

F = TypeVar("F", bound=Callable[..., Any])


def _group(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    return None if value is None else validate_group(value)


def _properties(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    props: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--kafka-property {item!r}: expected key=value, e.g. security.protocol=SASL_SSL")
        props[key.strip()] = value
    return props


@dataclass(frozen=True)
class Connection:
    """What the shared options say about where and how to connect."""

    zookeeper: str
    zk_auth: str | None
    bootstrap_servers: str | None
    connect_timeout_s: float
    kafka_properties: dict[str, str] = field(default_factory=dict)


def connection_options(*, kafka: bool = True) -> Callable[[F], F]:
    """--zookeeper, --zk-auth, --connect-timeout and (with kafka) --bootstrap-servers, --kafka-property.

    They reach the command as one `conn: Connection` argument.
    """

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            kwargs["conn"] = Connection(
                zookeeper=kwargs.pop("zookeeper"),
                zk_auth=kwargs.pop("zk_auth"),
                bootstrap_servers=kwargs.pop("bootstrap_servers", None),
                connect_timeout_s=kwargs.pop("connect_timeout"),
                kafka_properties=kwargs.pop("kafka_property", {}),
            )
            return func(*args, **kwargs)

        options = [
            click.option(
                "--zookeeper", "-z", required=True, metavar="HOST:PORT[,..][/chroot]", help="ZooKeeper connect string."
            ),
            click.option(
                "--zk-auth",
                metavar="digest:USER:PASSWORD",
                envvar="MIGRATOR_ZK_AUTH",
                help="ZooKeeper identity (also from $MIGRATOR_ZK_AUTH); needed on groups protected by `acl protect`.",
            ),
            click.option(
                "--connect-timeout",
                type=click.FloatRange(min=0.1),
                default=DEFAULT_CONNECT_TIMEOUT_S,
                show_default=True,
                metavar="SECONDS",
                help="Give up on an unreachable ZooKeeper or broker after this long.",
            ),
        ]
        if kafka:
            options += [
                click.option(
                    "--bootstrap-servers", "-b", metavar="HOST:PORT[,..]", help="Kafka brokers (the group's cluster)."
                ),
                click.option(
                    "--kafka-property",
                    multiple=True,
                    metavar="KEY=VALUE",
                    callback=_properties,
                    help="Client property for every Kafka connection (SASL/SSL); repeatable.",
                ),
            ]
        for option in reversed(options):
            wrapper = option(wrapper)
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


def make_admin(conn: Connection) -> KafkaAdmin | None:
    if not conn.bootstrap_servers:
        return None
    return KafkaAdmin(conn.bootstrap_servers, conn.kafka_properties, timeout_s=conn.connect_timeout_s)


@contextmanager
def zookeeper(conn: Connection, *, auth: str | None = None) -> Iterator[KazooClient]:
    """A connected client, closed on exit; kazoo errors become one-line MigratorErrors."""
    _quiet_libraries()
    zk = connect(conn.zookeeper, auth=auth or conn.zk_auth, timeout_s=conn.connect_timeout_s)
    try:
        yield zk
    except NoAuthError as exc:
        raise RefusedError("not authorised by ZooKeeper: run with --zk-auth digest:<user>:<password>") from exc
    except (ConnectionLoss, SessionExpiredError) as exc:
        raise MigratorError(f"lost the ZooKeeper connection to {conn.zookeeper}; nothing more was written") from exc
    except KazooException as exc:
        raise MigratorError(f"ZooKeeper error: {type(exc).__name__} {exc}".strip()) from exc
    finally:
        zk.stop()
        zk.close()


def echo_json(doc: object) -> None:
    click.echo(json.dumps(doc, indent=2, sort_keys=False, default=str))
