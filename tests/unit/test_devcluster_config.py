"""The broker and ZooKeeper settings other parts of the project depend on."""

from __future__ import annotations

from pathlib import Path

from migrator.devcluster import config


def _props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def test_zookeeper_allows_short_sessions_and_the_words_we_use() -> None:
    cfg = _props(config.zoo_cfg(2181, Path("/data")))
    assert cfg["tickTime"] == "500"  # minSessionTimeout = 1 s
    assert cfg["clientPortAddress"] == "127.0.0.1"
    assert cfg["admin.enableServer"] == "false"
    assert set(cfg["4lw.commands.whitelist"].split(",")) == {"cons", "dump", "mntr", "ruok", "srvr"}
    assert cfg["maxClientCnxns"] == "0"


def test_broker_is_zookeeper_mode_on_loopback_with_fast_groups() -> None:
    props = _props(config.server_properties(2, 9092, "127.0.0.1:2181", Path("/logs")))
    assert props["broker.id"] == "2"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9092"
    assert props["zookeeper.connect"] == "127.0.0.1:2181"
    assert props["group.initial.rebalance.delay.ms"] == "0"
    assert props["group.min.session.timeout.ms"] == "1000"
    assert props["auto.create.topics.enable"] == "false"
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["offsets.topic.num.partitions"] == "4"
    assert "group.max.size" not in props


def test_group_max_size_and_extra_config_are_passed_through() -> None:
    props = _props(config.server_properties(1, 9092, "zk:1", Path("/l"), group_max_size=3, extra={"num.partitions": 7}))
    assert props["group.max.size"] == "3"
    assert props["num.partitions"] == "7"


def test_jvm_command_names_the_config_so_down_can_recognise_it() -> None:
    cmd = config.jvm_command(
        "java",
        Path("/libs"),
        Path("/c/log4j.properties"),
        Path("/c/zk.log"),
        "-Xmx256m",
        config.ZK_MAIN,
        Path("/c/zoo.cfg"),
    )
    assert cmd[0] == "java" and "-Xmx256m" in cmd and "-XX:+UseG1GC" in cmd
    assert "-XX:TieredStopAtLevel=1" in cmd  # a (re)start on a busy host is not slowed by C2 compiling
    assert cmd[-2:] == [config.ZK_MAIN, "/c/zoo.cfg"]
    assert cmd[cmd.index("-cp") + 1] == "/libs/*"


def test_an_ensemble_member_lists_every_server_and_its_own_client_port() -> None:
    peers = [config.QuorumPeer(i, 3000 + i, 4000 + i) for i in (1, 2, 3)]
    cfg = _props(config.zoo_cfg(2182, Path("/data"), peers))
    assert cfg["clientPort"] == "2182"
    assert cfg["server.1"] == "127.0.0.1:3001:4001"
    assert cfg["server.3"] == "127.0.0.1:3003:4003"
    assert "server.1" not in _props(config.zoo_cfg(2181, Path("/data")))  # standalone stays standalone


def test_a_proxied_broker_advertises_the_proxy_and_listens_on_its_own_port() -> None:
    props = _props(config.server_properties(1, 9092, "zk:1", Path("/l"), advertised_port=9192))
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9092"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9192"
