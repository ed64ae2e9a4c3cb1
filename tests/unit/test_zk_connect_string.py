"""ZooKeeper connect strings and identities are parsed in one place (`migrator.zk.connect_string`)."""

from __future__ import annotations

import pytest

from migrator.config import ConsumerConfig
from migrator.connector import _fetcher_properties
from migrator.errors import ConfigError
from migrator.ops.modes import who_am_i
from migrator.zk.client import digest_acl_id, parse_auth
from migrator.zk.connect_string import ZkIdentity, auth_problem, parse_identity, split_connect

BASE = {"group.id": "g", "zookeeper.connect": "zk1:2181,zk2:2181/kafka"}


@pytest.mark.parametrize(
    ("auth", "identity"),
    [
        ("digest:ops:s3cret", ZkIdentity("digest", "ops", "s3cret")),
        ("digest:ops:with:colons", ZkIdentity("digest", "ops", "with:colons")),
        ("sasl", ZkIdentity("sasl")),
        ("sasl:svc:pw", ZkIdentity("sasl", "svc", "pw")),
        ("digest:ops", None),
        ("digest::pw", None),
        ("sasl:svc", None),
        ("kerberos:x:y", None),
    ],
)
def test_identities(auth: str, identity: ZkIdentity | None) -> None:
    assert parse_identity(auth) == identity
    assert (auth_problem(auth) is None) == (identity is not None)


def test_every_user_of_an_identity_reads_the_same_parse() -> None:
    assert parse_auth("digest:ops:a:b") == ([("digest", "ops:a:b")], None)
    assert parse_auth("sasl") == ([], {"mechanism": "GSSAPI"})
    assert parse_auth("sasl:svc:pw") == ([], {"mechanism": "DIGEST-MD5", "username": "svc", "password": "pw"})
    assert who_am_i("digest:ops:a:b") == "ops (digest)"
    assert digest_acl_id("digest:ops:a:b").startswith("ops:")
    with pytest.raises(ConfigError):
        parse_auth("digest:ops")
    with pytest.raises(ConfigError):
        digest_acl_id("sasl:svc:pw")


def test_the_chroot_is_split_in_one_place() -> None:
    assert split_connect("zk1:2181,zk2:2181/kafka/a") == ("zk1:2181,zk2:2181", "/kafka/a")
    assert split_connect("zk1:2181") == ("zk1:2181", None)
    config = ConsumerConfig.from_mapping(BASE)
    assert (config.zookeeper_hosts, config.zookeeper_chroot) == split_connect(BASE["zookeeper.connect"])


def test_socket_timeout_and_offset_reset_reach_the_fetcher() -> None:
    config = ConsumerConfig.from_mapping({**BASE, "socket.timeout.ms": "12345", "auto.offset.reset": "smallest"})
    props = _fetcher_properties(config)
    assert props["socket.timeout.ms"] == 12345 and props["auto.offset.reset"] == "earliest"
    assert _fetcher_properties(ConsumerConfig.from_mapping(BASE))["auto.offset.reset"] == "latest"
    passed = ConsumerConfig.from_mapping({**BASE, "kafka.socket.timeout.ms": "999"})
    assert _fetcher_properties(passed)["socket.timeout.ms"] == "999"  # the pass-through property wins
