"""`dev-cluster up --backend docker`: the same topology in containers, for machines without a JDK.

Optional by design: the local JVM backend is what tests and CI use. This only runs when a Docker
daemon answers; otherwise it refuses with one line. Ports are mapped 1:1 on loopback so that the
broker can advertise an address that works both from the host and from inside its container.
"""

from __future__ import annotations

import contextlib
from typing import Any

from migrator.devcluster import state
from migrator.devcluster.ports import HOST, free_port
from migrator.errors import EnvironmentProblem

CP_VERSION = "7.9.0"  # Confluent Platform 7.9 ships Apache Kafka 3.9
ZK_IMAGE = f"confluentinc/cp-zookeeper:{CP_VERSION}"
KAFKA_IMAGE = f"confluentinc/cp-kafka:{CP_VERSION}"


def docker_client(timeout: int = 3) -> Any:
    """A client for a daemon that answers a ping, or EnvironmentProblem naming the fix."""
    try:
        import docker
    except ImportError as exc:
        raise EnvironmentProblem("the docker backend needs `pip install testcontainers docker`") from exc
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as exc:  # DockerException, connection refused, missing socket
        raise EnvironmentProblem(
            "no Docker daemon answers (is dockerd running and DOCKER_HOST right?): "
            "use the default local backend (`--backend local`, needs a JDK 17 and Maven)"
        ) from exc
    return client


def _broker_env(kafka_port: int, group_max_size: int | None) -> dict[str, str]:
    """The broker's settings, as the local backend's (one replica, no rebalance delay, no auto-created topics)."""
    env = {
        "KAFKA_BROKER_ID": "1",
        "KAFKA_ZOOKEEPER_CONNECT": "zookeeper:2181",
        "KAFKA_LISTENERS": f"PLAINTEXT://0.0.0.0:{kafka_port}",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://{HOST}:{kafka_port}",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "4",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "1000",
        "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
    }
    if group_max_size is not None:
        env["KAFKA_GROUP_MAX_SIZE"] = str(group_max_size)
    return env


def start(name: str, group_max_size: int | None = None) -> state.ClusterState:
    """Start ZooKeeper + one broker in containers that outlive this process (`down` removes them)."""
    docker_client()
    from testcontainers.core.config import testcontainers_config
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network

    testcontainers_config.ryuk_disabled = True  # the reaper would remove them when the CLI exits
    zk_port, kafka_port = free_port(), free_port()
    network = Network().create()
    zk = (
        DockerContainer(ZK_IMAGE)
        .with_network(network)
        .with_network_aliases("zookeeper")
        .with_env("ZOOKEEPER_CLIENT_PORT", "2181")
        .with_env("ZOOKEEPER_TICK_TIME", "500")
        .with_env("KAFKA_OPTS", "-Dzookeeper.4lw.commands.whitelist=mntr,ruok,srvr,cons,dump")
        .with_bind_ports(2181, zk_port)
    )
    env = _broker_env(kafka_port, group_max_size)
    kafka = DockerContainer(KAFKA_IMAGE).with_network(network).with_bind_ports(kafka_port, kafka_port)
    for key, value in env.items():
        kafka = kafka.with_env(key, value)
    zk.start()
    kafka.start()
    containers = [zk.get_wrapped_container().id, kafka.get_wrapped_container().id]
    st = state.ClusterState(
        name=name,
        cluster_dir="",
        libs="",
        backend="docker",
        detached=True,
        processes=[
            state.ProcessState(name="zookeeper", port=zk_port, config=ZK_IMAGE),
            state.ProcessState(name="broker-1", port=kafka_port, config=KAFKA_IMAGE, broker_id=1),
        ],
        containers=containers,
    )
    state.save(st)
    return st


def down(st: state.ClusterState) -> None:
    """Remove the cluster's containers (and their network) and forget it."""
    client = docker_client()
    networks = set()
    for cid in st.containers:
        try:
            container = client.containers.get(cid)
        except Exception:
            continue  # already gone
        networks.update(container.attrs.get("NetworkSettings", {}).get("Networks", {}).keys())
        container.remove(force=True, v=True)
    for net in networks - {"bridge", "host", "none"}:
        with contextlib.suppress(Exception):  # shared or already removed
            client.networks.get(net).remove()
    state.remove(st)
