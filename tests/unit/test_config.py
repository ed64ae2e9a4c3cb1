"""ConsumerConfig: legacy defaults, strict validation, KIP-125 prefixes and .properties parsing."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest

from migrator.config import ConsumerConfig, Property, parse_properties, property_definitions
from migrator.errors import ConfigError

BASE = {"zookeeper.connect": "zk1:2181,zk2:2181/kafka", "group.id": "orders"}
BRIDGE = {**BASE, "coordination.migration.enabled": "true", "coordination.migration.bootstrap.servers": "b:9092"}


def cfg(**props: str | int | bool) -> ConsumerConfig:
    """BASE plus `props`; keys use `__` for `.` so tests read like property names."""
    return ConsumerConfig.from_mapping({**BASE, **{k.replace("__", "."): v for k, v in props.items()}})


def error_of(mapping: dict[str, str | int | bool]) -> str:
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_mapping(mapping)
    message = str(info.value)
    assert "\n" not in message
    return message


# ---------------------------------------------------------------------- defaults

DEFINITIONS = property_definitions()


@pytest.mark.parametrize("definition", [d for d in DEFINITIONS if not d.required], ids=lambda d: d.name)
def test_default(definition: Property) -> None:
    """Each default is the one its definition states (or derives from BASE), with the field's own type."""
    c = cfg()
    value = getattr(c, definition.attr)
    expected = definition.default if definition.derive is None else definition.derive(dataclasses.asdict(c))
    assert value == expected
    assert type(value) is type(expected)


def test_every_field_is_a_property_or_a_prefix_family() -> None:
    fields = {f.name for f in dataclasses.fields(ConsumerConfig)}
    families = {"migration_properties", "fetcher_properties", "kafka_properties", "zookeeper_tls_properties"}
    assert fields - families - {"explicit_keys"} == {d.attr for d in DEFINITIONS}
    for family in families:
        assert getattr(cfg(), family) == {}


def test_derived_defaults_are_legacy_values() -> None:
    """Scala's derived defaults, spelled out once here as the legacy connector's behaviour to match."""
    c = cfg()
    assert c.zookeeper_connection_timeout_ms == c.zookeeper_session_timeout_ms
    assert c.rebalance_backoff_ms == c.zookeeper_sync_time_ms
    assert c.client_id == "orders"
    assert c.dual_commit_enabled is False


def test_required_values_are_kept():
    c = cfg()
    assert c.zookeeper_connect == "zk1:2181,zk2:2181/kafka"
    assert c.group_id == "orders"
    assert c.zookeeper_hosts == "zk1:2181,zk2:2181"
    assert c.zookeeper_chroot == "/kafka"
    assert ConsumerConfig.from_mapping({**BASE, "zookeeper.connect": "zk:2181"}).zookeeper_chroot is None


@pytest.mark.parametrize("missing", ["zookeeper.connect", "group.id"])
def test_required_properties(missing):
    mapping = {k: v for k, v in BASE.items() if k != missing}
    assert error_of(mapping) == f"{missing} is required"


def test_derived_defaults_follow_their_source():
    c = cfg(zookeeper__session__timeout__ms="9000", zookeeper__sync__time__ms="700", group__id="other")
    assert c.zookeeper_connection_timeout_ms == 9000
    assert c.rebalance_backoff_ms == 700
    assert c.client_id == "other"


def test_derived_defaults_yield_to_explicit_values():
    c = cfg(
        zookeeper__session__timeout__ms="9000",
        zookeeper__connection__timeout__ms="3000",
        zookeeper__sync__time__ms="700",
        rebalance__backoff__ms="50",
        client__id="me",
    )
    assert (c.zookeeper_connection_timeout_ms, c.rebalance_backoff_ms, c.client_id) == (3000, 50, "me")


@pytest.mark.parametrize(
    ("storage", "explicit", "expected"),
    [
        ("zookeeper", None, False),
        ("kafka", None, True),
        ("KAFKA", None, True),
        ("kafka", "false", False),
        ("zookeeper", "true", True),
    ],
)
def test_dual_commit_default_rule(storage, explicit, expected):
    props = {"offsets.storage": storage}
    if explicit is not None:
        props["dual.commit.enabled"] = explicit
    c = ConsumerConfig.from_mapping({**BASE, **props})
    assert c.offsets_storage == storage.lower()
    assert c.dual_commit_enabled is expected


# ---------------------------------------------------------------------- value errors


@pytest.mark.parametrize(
    ("prop", "value", "message"),
    [
        ("auto.offset.reset", "earliest", "auto.offset.reset: 'earliest' is not one of smallest, largest"),
        ("auto.offset.reset", "LARGEST", "auto.offset.reset: 'LARGEST' is not one of smallest, largest"),
        (
            "partition.assignment.strategy",
            "sticky",
            "partition.assignment.strategy: 'sticky' is not one of range, roundrobin",
        ),
        ("offsets.storage", "redis", "offsets.storage: 'redis' is not one of zookeeper, kafka"),
        ("auto.commit.enable", "yes", "auto.commit.enable: 'yes' is not one of true, false"),
        ("dual.commit.enabled", "1", "dual.commit.enabled: '1' is not one of true, false"),
        ("exclude.internal.topics", "", "exclude.internal.topics: '' is not one of true, false"),
        ("coordination.migration.enabled", "on", "coordination.migration.enabled: 'on' is not one of true, false"),
        ("migration.static.membership", "no", "migration.static.membership: 'no' is not one of true, false"),
    ],
)
def test_enum_and_boolean_errors_name_property_and_allowed_values(prop, value, message):
    assert error_of({**BASE, prop: value}) == message


@pytest.mark.parametrize("text", ["TRUE", "True", " true ", True])
def test_booleans_are_case_insensitive(text):
    assert cfg(auto__commit__enable=text).auto_commit_enable is True


@pytest.mark.parametrize(
    ("prop", "value", "fragment"),
    [
        ("socket.timeout.ms", "30s", "socket.timeout.ms: '30s' is not an integer"),
        ("socket.timeout.ms", "1.5", "is not an integer"),
        ("socket.timeout.ms", True, "socket.timeout.ms: 'true' is not an integer"),
        ("fetch.min.bytes", "-1", "fetch.min.bytes: -1 is out of range; allowed 0..2147483647"),
        ("num.consumer.fetchers", "0", "num.consumer.fetchers: 0 is out of range; allowed 1..2147483647"),
        ("rebalance.max.retries", "0", "allowed 1..2147483647"),
        ("fetch.message.max.bytes", str(2**31), "is out of range"),
        ("consumer.timeout.ms", "-2", "consumer.timeout.ms: -2 is out of range; allowed -1 (block forever)"),
        ("metrics.port", "65536", "metrics.port: 65536 is out of range; allowed 0..65535"),
        ("metrics.port", "-1", "metrics.port: -1 is out of range"),
        ("consumer.id", "a/b", "consumer.id: 'a/b' contains '/'"),
        ("consumer.id", "  ", "consumer.id: must not be empty"),
        ("client.id", "a\nb", "client.id: client.id name 'a\\nb' contains illegal character"),
    ],
)
def test_bad_values(prop, value, fragment):
    assert fragment in error_of({**BASE, prop: value})


def test_integers_accept_ints_and_padded_strings():
    c = cfg(socket__timeout__ms=1234, fetch__wait__max__ms=" 77 ", metrics__port="0", consumer__timeout__ms=-1)
    assert (c.socket_timeout_ms, c.fetch_wait_max_ms, c.metrics_port, c.consumer_timeout_ms) == (1234, 77, 0, -1)


def test_fetch_wait_must_not_exceed_socket_timeout():
    message = error_of({**BASE, "socket.timeout.ms": "100", "fetch.wait.max.ms": "101"})
    assert message.startswith("fetch.wait.max.ms: 101 exceeds socket.timeout.ms (100)")
    assert cfg(socket__timeout__ms="100", fetch__wait__max__ms="100").fetch_wait_max_ms == 100


@pytest.mark.parametrize("group", ["", "a/b", "..", "a\nb"])
def test_group_id_is_validated_as_config_error(group):
    assert error_of({**BASE, "group.id": group}).startswith("group.id:")


@pytest.mark.parametrize(
    "connect",
    ["zk:2181", "zk", "zk1:2181,zk2:2182,zk3:2183/a/b", "10.0.0.1:2181/kafka", "[::1]:2181", " zk1:2181 , zk2:2181"],
)
def test_zookeeper_connect_accepted(connect):
    c = ConsumerConfig.from_mapping({**BASE, "zookeeper.connect": connect})
    assert c.zookeeper_connect == connect.replace(" ", "")


@pytest.mark.parametrize(
    "connect", ["zk:abc", "zk:0", "zk:70000", "zk1:2181,,zk2:2181", "zk:2181/", "zk:2181//a", ":2181"]
)
def test_zookeeper_connect_rejected(connect):
    message = error_of({**BASE, "zookeeper.connect": connect})
    assert message.startswith("zookeeper.connect:")
    assert "host:port[,host:port...][/chroot]" in message


@pytest.mark.parametrize("auth", ["digest:alice:s3cret", "digest:alice:pa:ss", "sasl", "sasl:bob:pw"])
def test_zookeeper_auth_accepted(auth):
    assert cfg(zookeeper__auth=auth).zookeeper_auth == auth


@pytest.mark.parametrize("auth", ["kerberos", "digest:alice", "digest::pw", "digest:alice:", "sasl:bob"])
def test_zookeeper_auth_rejected_listing_schemes(auth):
    message = error_of({**BASE, "zookeeper.auth": auth})
    assert message.startswith("zookeeper.auth:")
    assert "digest:<user>:<password>, sasl, sasl:<user>:<password>" in message
    assert "s3cret" not in message


# ---------------------------------------------------------------------- unknown properties


def test_unknown_property_with_suggestion():
    assert error_of({**BASE, "auto.offset.rest": "smallest"}) == (
        "unknown property 'auto.offset.rest' (did you mean 'auto.offset.reset'?)"
    )


def test_unknown_property_without_close_match():
    assert error_of({**BASE, "completely.different": "x"}) == "unknown property 'completely.different'"


def test_new_consumer_property_suggests_the_prefixes():
    message = error_of({**BASE, "bootstrap.servers": "b:9092"})
    assert "'kafka.bootstrap.servers'" in message
    assert "'coordination.migration.bootstrap.servers'" in message


def test_all_unknown_properties_are_named():
    message = error_of({**BASE, "zzz": "1", "aaa": "2"})
    assert message.startswith("unknown properties 'aaa', 'zzz'")


@pytest.mark.parametrize("key", ["coordination.migration.", "fetcher.", "kafka."])
def test_bare_prefix_is_rejected(key):
    assert "missing after the prefix" in error_of({**BASE, key: "x"})


# ---------------------------------------------------------------------- migration and pass-through


def test_migration_prefix_is_collected_and_stripped():
    c = ConsumerConfig.from_mapping(
        {**BRIDGE, "coordination.migration.session.timeout.ms": "10000", "coordination.migration.poll.interval.ms": 250}
    )
    assert c.migration_enabled is True
    assert c.migration_poll_interval_ms == 250
    assert dict(c.migration_properties) == {"bootstrap.servers": "b:9092", "session.timeout.ms": "10000"}
    assert c.bootstrap_servers == "b:9092"


def test_migration_properties_values_are_passed_verbatim_as_text():
    c = ConsumerConfig.from_mapping({**BASE, "coordination.migration.check.crcs": True, "fetcher.x": 5})
    assert c.migration_properties["check.crcs"] == "true"
    assert c.fetcher_properties["x"] == "5"


def test_bootstrap_servers_required_when_enabled():
    message = error_of({**BASE, "coordination.migration.enabled": "true"})
    assert message.startswith("coordination.migration.bootstrap.servers is required")


def test_bootstrap_servers_not_required_when_disabled():
    assert cfg().bootstrap_servers is None


def test_kafka_bootstrap_servers_satisfies_the_requirement_and_migration_wins():
    c = ConsumerConfig.from_mapping(
        {**BASE, "coordination.migration.enabled": "true", "kafka.bootstrap.servers": "all:9092"}
    )
    assert c.bootstrap_servers == "all:9092"
    c2 = ConsumerConfig.from_mapping({**BRIDGE, "kafka.bootstrap.servers": "all:9092"})
    assert c2.bootstrap_servers == "b:9092"


@pytest.mark.parametrize("prefix", ["coordination.migration.", "kafka."])
def test_group_id_override_of_embedded_member_rejected(prefix):
    message = error_of({**BRIDGE, f"{prefix}group.id": "other"})
    assert message.startswith(f"{prefix}group.id: not allowed")
    assert "always joins the connector's group.id" in message


@pytest.mark.parametrize("prefix", ["coordination.migration.", "kafka."])
@pytest.mark.parametrize("value", ["true", "TRUE", True])
def test_auto_commit_of_embedded_member_rejected(prefix, value):
    message = error_of({**BRIDGE, f"{prefix}enable.auto.commit": value})
    assert message.startswith(f"{prefix}enable.auto.commit: only false is allowed")
    assert "never commits on its own" in message


def test_auto_commit_false_is_allowed():
    c = ConsumerConfig.from_mapping({**BRIDGE, "coordination.migration.enable.auto.commit": "false"})
    assert c.migration_properties["enable.auto.commit"] == "false"


def test_client_id_override_of_embedded_member_rejected():
    assert "consumerId" in error_of({**BRIDGE, "coordination.migration.client.id": "x"})


@pytest.mark.parametrize(
    "value",
    ["range", "roundrobin", "range,roundrobin", " roundrobin , range ", "cooperative-sticky", " cooperative-sticky"],
)
def test_eager_assignors_or_cooperative_sticky_alone_allowed_for_embedded_member(value):
    c = ConsumerConfig.from_mapping({**BRIDGE, "coordination.migration.partition.assignment.strategy": value})
    assert c.migration_properties["partition.assignment.strategy"] == value


@pytest.mark.parametrize("prefix", ["coordination.migration.", "kafka."])
@pytest.mark.parametrize("value", ["range,cooperative-sticky", "cooperative-sticky,roundrobin", "range,", "sticky"])
def test_other_assignors_rejected_for_embedded_member(prefix, value):
    message = error_of({**BRIDGE, f"{prefix}partition.assignment.strategy": value})
    assert message.startswith(f"{prefix}partition.assignment.strategy: {value!r} is neither a comma list of range")
    assert "cooperative-sticky alone" in message


def test_fetcher_and_kafka_prefixes():
    c = ConsumerConfig.from_mapping(
        {
            **BASE,
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "PLAIN",
            "fetcher.fetch.max.bytes": "1000",
            "kafka.fetch.max.bytes": "5000",
        }
    )
    assert dict(c.kafka_properties) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "fetch.max.bytes": "5000",
    }
    assert dict(c.fetcher_properties) == {"fetch.max.bytes": "1000"}
    assert c.fetcher_client_properties() == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "fetch.max.bytes": "1000",
    }


def test_embedded_member_properties():
    c = ConsumerConfig.from_mapping(
        {**BRIDGE, "kafka.session.timeout.ms": "30000", "coordination.migration.session.timeout.ms": "45000"}
    )
    props = c.embedded_member_properties("orders_host-1-abcd")
    assert props == {
        "bootstrap.servers": "b:9092",
        "session.timeout.ms": "45000",
        "group.id": "orders",
        "client.id": "orders_host-1-abcd",
        "enable.auto.commit": "false",
        "socket.timeout.ms": "10000",  # offsets.channel.socket.timeout.ms
        "topic.metadata.refresh.interval.ms": "10000",  # the same
    }


def test_the_embedded_members_request_timeout_follows_the_offsets_channel_unless_set() -> None:
    def timeout(**props: str) -> str:
        return ConsumerConfig.from_mapping({**BRIDGE, **props}).embedded_member_properties("x")["socket.timeout.ms"]

    assert timeout(**{"offsets.channel.socket.timeout.ms": "4000"}) == "4000"
    assert timeout(**{"kafka.socket.timeout.ms": "20000"}) == "20000"
    assert timeout(**{"coordination.migration.socket.timeout.ms": "20000"}) == "20000"


def test_static_membership_sets_group_instance_id_to_consumer_id():
    c = ConsumerConfig.from_mapping({**BRIDGE, "migration.static.membership": "true", "consumer.id": "c1"})
    assert c.migration_static_membership is True
    props = c.embedded_member_properties("orders_c1")
    assert props["group.instance.id"] == "c1"
    assert props["client.id"] == "orders_c1"  # bridges are still recognised by client.id = consumerId
    assert "group.instance.id" not in cfg().embedded_member_properties("x")
    dynamic = ConsumerConfig.from_mapping({**BRIDGE, "consumer.id": "c1"})
    assert "group.instance.id" not in dynamic.embedded_member_properties("orders_c1")


def test_static_membership_survives_a_round_trip():
    c = ConsumerConfig.from_mapping({**BRIDGE, "migration.static.membership": "true", "consumer.id": "c1"})
    assert c.to_properties(explicit_only=True)["migration.static.membership"] == "true"
    assert ConsumerConfig.from_mapping(c.to_properties()) == c


def test_static_membership_requires_consumer_id():
    # A generated consumerId differs at every start: each restart would leave a static member behind that
    # holds its partitions until its session times out, the opposite of what static membership is for.
    message = error_of({**BRIDGE, "migration.static.membership": "true"})
    assert message.startswith("migration.static.membership: requires consumer.id")


def test_static_membership_without_migration_needs_no_consumer_id():
    # Rolling a bridge back to a legacy connector (enabled=false) must not be blocked by a leftover property.
    c = ConsumerConfig.from_mapping({**BASE, "migration.static.membership": "true"})
    assert c.migration_static_membership is True and c.migration_enabled is False


@pytest.mark.parametrize("prefix", ["coordination.migration.", "kafka."])
def test_static_membership_conflicts_with_explicit_instance_id(prefix):
    message = error_of(
        {**BRIDGE, "consumer.id": "c1", "migration.static.membership": "true", f"{prefix}group.instance.id": "i"}
    )
    assert message.startswith("migration.static.membership: cannot be combined with an explicit group.instance.id")


# ---------------------------------------------------------------------- immutability, round trip, overrides


def test_immutable():
    c = cfg()
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.group_id = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        c.migration_properties["x"] = "y"  # type: ignore[index]
    with pytest.raises(AttributeError):
        c.migration_properties._data = {}  # type: ignore[attr-defined]
    assert not hasattr(c, "__dict__")


def test_mapping_input_is_copied():
    mapping = {**BRIDGE}
    c = ConsumerConfig.from_mapping(mapping)
    mapping["coordination.migration.bootstrap.servers"] = "changed:1"
    assert c.bootstrap_servers == "b:9092"


def test_hashable_and_picklable():
    c = ConsumerConfig.from_mapping({**BRIDGE, "kafka.security.protocol": "SSL"})
    assert hash(c) == hash(ConsumerConfig.from_mapping({**BRIDGE, "kafka.security.protocol": "SSL"}))
    assert pickle.loads(pickle.dumps(c)) == c


def test_round_trip():
    c = ConsumerConfig.from_mapping(
        {
            **BRIDGE,
            "offsets.storage": "kafka",
            "consumer.id": "c1",
            "metrics.port": 9100,
            "zookeeper.auth": "digest:u:p",
            "fetcher.check.crcs": "true",
        }
    )
    props = c.to_properties()
    assert all(isinstance(v, str) for v in props.values())
    assert props["dual.commit.enabled"] == "true"
    assert props["coordination.migration.bootstrap.servers"] == "b:9092"
    assert props["fetcher.check.crcs"] == "true"
    assert "consumer.id" in props
    assert ConsumerConfig.from_mapping(props) == c
    assert "metrics.port" not in cfg().to_properties()


def test_to_properties_explicit_only():
    assert cfg(auto__offset__reset="smallest").to_properties(explicit_only=True) == {
        **BASE,
        "auto.offset.reset": "smallest",
    }


def test_redaction_hides_secrets():
    c = ConsumerConfig.from_mapping(
        {**BASE, "zookeeper.auth": "digest:alice:s3cret", "kafka.sasl.password": "hunter2", "kafka.sasl.username": "al"}
    )
    shown = c.to_properties(redact=True)
    assert shown["zookeeper.auth"] == "digest:alice:***"
    assert shown["kafka.sasl.password"] == "***"
    assert shown["kafka.sasl.username"] == "al"
    assert "s3cret" not in repr(c) and "hunter2" not in repr(c)


def test_with_overrides_by_attribute_or_property_name():
    c = cfg()
    d = c.with_overrides(auto_offset_reset="smallest", **{"consumer.id": "c9"})
    assert (d.auto_offset_reset, d.consumer_id) == ("smallest", "c9")
    assert c.auto_offset_reset == "largest"
    assert d.with_overrides(consumer_id=None).consumer_id is None


def test_with_overrides_rederives_defaults():
    d = cfg().with_overrides(offsets_storage="kafka", zookeeper_session_timeout_ms=8000)
    assert d.dual_commit_enabled is True
    assert d.zookeeper_connection_timeout_ms == 8000
    e = cfg(dual__commit__enabled="false").with_overrides(offsets_storage="kafka")
    assert e.dual_commit_enabled is False


def test_with_overrides_validates():
    with pytest.raises(ConfigError, match=r"auto\.offset\.reset: 'earliest'"):
        cfg().with_overrides(auto_offset_reset="earliest")
    with pytest.raises(ConfigError, match="unknown property"):
        cfg().with_overrides(no_such_thing=1)


def test_non_string_values_rejected():
    assert "must be a string, integer or boolean" in error_of({**BASE, "socket.timeout.ms": 1.5})  # type: ignore[dict-item]


# ---------------------------------------------------------------------- .properties files


def write(tmp_path: Path, text: str, encoding: str = "utf-8") -> Path:
    path = tmp_path / "consumer.properties"
    path.write_bytes(text.encode(encoding))
    return path


def test_properties_file(tmp_path):
    path = write(
        tmp_path,
        "# legacy consumer\n"
        "! also a comment\n"
        "   # indented comment\n"
        "\n"
        "zookeeper.connect=zk1:2181,\\\n"
        "                  zk2:2181/kafka\n"
        "group.id : orders   \n"
        "auto.offset.reset smallest\n"
        "\tconsumer.timeout.ms=\t500\n"
        "coordination.migration.enabled = true\n"
        "coordination.migration.bootstrap.servers: b1:9092,b2:9092\n"
        "kafka.sasl.jaas.config=org.Foo required \\\n"
        '    username="u" \\\n'
        '    password="p";\n',
    )
    c = ConsumerConfig.from_properties_file(path)
    assert c.zookeeper_connect == "zk1:2181,zk2:2181/kafka"
    assert c.group_id == "orders"
    assert c.auto_offset_reset == "smallest"
    assert c.consumer_timeout_ms == 500
    assert c.migration_enabled is True
    assert c.bootstrap_servers == "b1:9092,b2:9092"
    assert c.kafka_properties["sasl.jaas.config"] == 'org.Foo required username="u" password="p";'


def test_properties_file_errors_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="cannot read properties file"):
        ConsumerConfig.from_properties_file(tmp_path / "missing.properties")
    with pytest.raises(ConfigError, match=r"unknown property 'auto\.offset\.rest'"):
        ConsumerConfig.from_properties_file(write(tmp_path, "zookeeper.connect=z:1\ngroup.id=g\nauto.offset.rest=x\n"))


def test_properties_file_latin1_fallback(tmp_path):
    path = write(tmp_path, "zookeeper.connect=z:1\ngroup.id=g\nfetcher.note=caf\u00e9\n", encoding="iso-8859-1")
    assert ConsumerConfig.from_properties_file(path).fetcher_properties["note"] == "caf\u00e9"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=b", {"a": "b"}),
        ("a:b", {"a": "b"}),
        ("a b", {"a": "b"}),
        ("a = = b", {"a": "= b"}),
        ("a=", {"a": ""}),
        ("a", {"a": ""}),
        ("a=1\na=2", {"a": "2"}),
        ("a=b\r\nc=d\re=f", {"a": "b", "c": "d", "e": "f"}),
        ("a\\=b=c", {"a=b": "c"}),
        ("a\\:b\\ c=d", {"a:b c": "d"}),
        ("a=x\\\\", {"a": "x\\"}),
        ("a=x\\\\\\\n  y", {"a": "x\\y"}),
        ("a=x\\\n#not-a-comment", {"a": "x#not-a-comment"}),
        ("# c \\\nb=1", {"b": "1"}),
        ("a=x\\\n\nb=1", {"a": "x", "b": "1"}),
        ("a=\\u0041\\t\\n", {"a": "A\t\n"}),
        ("a=keep\\ ", {"a": "keep "}),
        ("a=trailing   ", {"a": "trailing"}),
        ("a=trailing \t\f\r\nb=1  \t", {"a": "trailing", "b": "1"}),
        ("a=in side ", {"a": "in side"}),
        ("a=x\\  ", {"a": "x "}),
        ("a=x\\\\  ", {"a": "x\\"}),
        ("a=x\\   \nb=y", {"a": "x ", "b": "y"}),
        ("a=x  \\\n  y  ", {"a": "x  y"}),
        ("a   ", {"a": ""}),
        ("a=x\\", {"a": "x"}),
    ],
)
def test_parse_properties(text, expected):
    assert parse_properties(text) == expected


def test_parse_properties_malformed_unicode_escape():
    with pytest.raises(ConfigError, match="malformed"):
        parse_properties("a=\\u12")


# ---------------------------------------------------------------------- the documented table


def _documented_default(definition: Property) -> str:
    if definition.required:
        return "required"
    if definition.derive is not None:
        return "derived"
    if definition.default is None:
        return "unset"
    if isinstance(definition.default, bool):
        return "true" if definition.default else "false"
    return str(definition.default)


def properties_table() -> str:
    """The table of docs/application.md, rendered from the definitions (the one place defaults live)."""
    lines = ["| property | default | what it does |", "|---|---|---|"]
    for d in DEFINITIONS:
        allowed = f" One of {', '.join(d.choices)}." if d.choices else ""
        lines.append(f"| `{d.name}` | {_documented_default(d)} | {d.doc}{allowed} |")
    return "\n".join(lines) + "\n"


def test_the_documented_properties_are_the_definitions() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "application.md").read_text()
    begin, end = "<!-- properties: generated from migrator/config.py -->\n", "<!-- /properties -->"
    documented = doc[doc.index(begin) + len(begin) : doc.index(end)]
    assert documented == properties_table(), f"replace the table in docs/application.md with:\n{properties_table()}"
