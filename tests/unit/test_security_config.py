"""Kafka security is configured once (`kafka.<p>`): a configuration whose clients would disagree is refused,
and without bootstrap servers the security protocol picks each broker's endpoint."""

from __future__ import annotations

import json

import pytest

from migrator.config import ConsumerConfig
from migrator.errors import ConfigError
from migrator.protocol.codecs import decode_broker, decode_broker_endpoints
from migrator.zk.brokers import endpoints_for

BRIDGE = {
    "zookeeper.connect": "zk:2181",
    "group.id": "sec",
    "coordination.migration.enabled": "true",
    "coordination.migration.bootstrap.servers": "b:9093",
}


def problems_of(props: dict[str, str]) -> tuple[str, ...]:
    with pytest.raises(ConfigError) as caught:
        ConsumerConfig.from_mapping({**BRIDGE, **props})
    return caught.value.problems


def test_security_only_for_the_embedded_member_is_refused_naming_both_properties() -> None:
    (problem,) = problems_of(
        {"coordination.migration.security.protocol": "SSL", "coordination.migration.ssl.ca.location": "ca.crt"}
    )[:1]
    assert problem.startswith("coordination.migration.security.protocol reaches only the embedded member")
    assert "no kafka.security.protocol" in problem
    assert "set it once as kafka.security.protocol" in problem


def test_every_disagreeing_security_property_is_named() -> None:
    found = problems_of(
        {
            "kafka.security.protocol": "SSL",
            "coordination.migration.security.protocol": "SASL_SSL",
            "fetcher.sasl.mechanism": "PLAIN",
        }
    )
    assert any("coordination.migration.security.protocol" in p and "kafka.security.protocol=SSL" in p for p in found)
    assert any(p.startswith("fetcher.sasl.mechanism reaches only the fetcher") for p in found)


def test_security_set_once_for_every_client_is_accepted_and_repeating_it_is_harmless() -> None:
    c = ConsumerConfig.from_mapping(
        {**BRIDGE, "kafka.security.protocol": "SSL", "coordination.migration.security.protocol": "SSL"}
    )
    assert c.security_protocol == "SSL"
    assert c.fetcher_client_properties()["security.protocol"] == "SSL"
    assert c.embedded_member_properties("m")["security.protocol"] == "SSL"


def _broker(*endpoints: str, protocols: dict[str, str] | None = None) -> bytes:
    node: dict[str, object] = {"endpoints": list(endpoints), "host": "h", "port": 9092}
    if protocols is not None:
        node["listener_security_protocol_map"] = protocols
    return json.dumps(node).encode()


def test_the_security_protocol_picks_each_brokers_endpoint() -> None:
    one = decode_broker_endpoints(_broker("PLAINTEXT://h1:9092", "SSL://h1:9093", "SASL_SSL://h1:9094"))
    two = decode_broker_endpoints(_broker("PLAINTEXT://h2:9092", "SSL://h2:9093"))
    assert endpoints_for([one, two], None) == "h1:9092,h2:9092"
    assert endpoints_for([one, two], "ssl") == "h1:9093,h2:9093"
    assert endpoints_for([one, two], "SASL_SSL") == "h1:9094"


def test_named_listeners_map_to_their_protocol() -> None:
    data = _broker("INTERNAL://h:9092", "EXTERNAL://h:9093", protocols={"INTERNAL": "PLAINTEXT", "EXTERNAL": "SSL"})
    assert endpoints_for([decode_broker_endpoints(data)], "SSL") == "h:9093"
    assert decode_broker(data) == ("h", 9092)


def test_no_endpoint_with_the_protocol_is_a_hint_naming_what_is_offered() -> None:
    with pytest.raises(ConfigError) as caught:
        endpoints_for([decode_broker_endpoints(_broker("PLAINTEXT://h:9092"))], "SASL_SSL")
    assert "register no SASL_SSL listener (they offer PLAINTEXT://h:9092)" in str(caught.value)
    assert endpoints_for([], "SSL") == ""


def test_a_broker_without_listeners_is_plaintext() -> None:
    old = json.dumps({"host": "old", "port": 9092}).encode()
    assert endpoints_for([decode_broker_endpoints(old)], None) == "old:9092"
