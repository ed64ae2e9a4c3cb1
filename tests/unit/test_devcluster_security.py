"""The dev cluster's secured listeners as configuration (the real broker is exercised in
tests/integration/test_security.py)."""

from __future__ import annotations

from pathlib import Path

from migrator.config import parse_properties
from migrator.devcluster.security import (
    SECURED_PROTOCOLS,
    Certificates,
    SecuredListeners,
    broker_properties,
    client_properties,
)


def test_secured_listeners_sit_beside_plaintext_which_brokers_keep_for_themselves() -> None:
    certs = Certificates(Path("/c/ca.crt"), Path("/c/broker.p12"))
    props = broker_properties(9092, {"SSL": 9093, "SASL_SSL": 9094, "SASL_PLAINTEXT": 9095}, certs)
    assert props["listeners"] == (
        "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,SASL_SSL://127.0.0.1:9094,SASL_PLAINTEXT://127.0.0.1:9095"
    )
    assert props["advertised.listeners"] == props["listeners"]
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert 'user_migrator="' in str(props["listener.name.sasl_ssl.plain.sasl.jaas.config"])


def test_client_properties_per_protocol() -> None:
    ca = Path("/c/ca.crt")
    assert client_properties("SSL", ca) == {"security.protocol": "SSL", "ssl.ca.location": "/c/ca.crt"}
    assert "ssl.ca.location" not in client_properties("SASL_PLAINTEXT", ca)
    assert client_properties("SASL_SSL", ca)["sasl.mechanism"] == "PLAIN"


def test_saved_listeners_load_back_and_write_one_properties_file_per_protocol(tmp_path: Path) -> None:
    listeners = SecuredListeners("/c/ca.crt", {p: f"127.0.0.1:{9093 + i}" for i, p in enumerate(SECURED_PROTOCOLS)})
    listeners.save(tmp_path)
    assert SecuredListeners.load(tmp_path) == listeners
    ssl = parse_properties((tmp_path / "client-ssl.properties").read_text())
    assert ssl == {"bootstrap.servers": "127.0.0.1:9093", "security.protocol": "SSL", "ssl.ca.location": "/c/ca.crt"}
    assert SecuredListeners.load(tmp_path / "nothing") is None
