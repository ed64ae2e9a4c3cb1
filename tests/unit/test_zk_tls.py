"""Kafka's ZooKeeper client TLS names (KIP-515) read into kazoo's TLS options, in one place."""

from __future__ import annotations

import pytest

from migrator.config import ConsumerConfig
from migrator.errors import ConfigError
from migrator.zk.client import ZkTls, zk_tls


def test_tls_is_off_unless_enabled() -> None:
    assert zk_tls({}) is None
    assert zk_tls({"zookeeper.ssl.truststore.location": "ca.crt"}) is None


def test_pem_stores_map_to_kazoo_options() -> None:
    tls = zk_tls({
        "zookeeper.ssl.client.enable": "true",
        "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
        "zookeeper.ssl.truststore.location": "ca.crt",
        "zookeeper.ssl.truststore.type": "PEM",
        "zookeeper.ssl.keystore.location": "client.pem",
        "zookeeper.ssl.keystore.password": "s3cret",
        "zookeeper.ssl.endpoint.identification.algorithm": "",
    })  # fmt: skip
    assert tls == ZkTls(ca="ca.crt", keystore="client.pem", keystore_password="s3cret", check_hostname=False)
    options = tls.kazoo_options()
    assert options["use_ssl"] is True and options["certfile"] == options["keyfile"] == "client.pem"


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("zookeeper.ssl.truststore.type", "JKS", "only PEM files are supported"),
        ("zookeeper.ssl.keystore.type", "PKCS12", "only PEM files are supported"),
        ("zookeeper.ssl.client.enable", "yes", "expected true or false"),
        ("zookeeper.ssl.endpoint.identification.algorithm", "LDAPS", "expected HTTPS or empty"),
        ("zookeeper.ssl.cipher.suites", "x", "unknown ZooKeeper TLS property"),
    ],
)
def test_what_cannot_be_honoured_is_refused(key: str, value: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        zk_tls({"zookeeper.ssl.client.enable": "true", key: value})


def test_the_connector_reads_the_same_keys() -> None:
    base = {"zookeeper.connect": "127.0.0.1:2182", "group.id": "g", "zookeeper.ssl.client.enable": "true"}
    assert ConsumerConfig.from_mapping(base | {"zookeeper.ssl.truststore.location": "ca.crt"}).zookeeper_tls == ZkTls(
        ca="ca.crt"
    )
    with pytest.raises(ConfigError, match=r"truststore\.type=JKS"):
        ConsumerConfig.from_mapping(base | {"zookeeper.ssl.truststore.type": "JKS"})
