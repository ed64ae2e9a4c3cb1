"""TLS and SASL listeners of the dev cluster, beside its own PLAINTEXT one (`dev-cluster up --security`).

Each broker gets an `SSL`, a `SASL_SSL` and a `SASL_PLAINTEXT` listener with the SASL/PLAIN user `migrator`.
Its certificate is signed by a dev CA generated once per user with `openssl` (under the cache root, so
every cluster and test run reuses it) for `127.0.0.1` and `localhost`. Brokers talk to each other over
PLAINTEXT, so the secured listeners change nothing else. What a client needs to reach each listener is
written to `security.json` in the cluster directory (`SecuredListeners.load`), and as one
`client-<protocol>.properties` file per protocol, ready for `--command-config`-style use.

ZooKeeper gets a TLS client port (`secureClientPort`, Netty) beside its plain one, with the same certificate;
the brokers keep the plain port. `zookeeper-tls.properties` holds what a client needs to use it (Kafka's
`zookeeper.ssl.*` names, which migrator's connector and CLI read).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from migrator.devcluster.paths import cache_root
from migrator.devcluster.ports import HOST, free_port
from migrator.errors import EnvironmentProblem

SECURED_PROTOCOLS = ("SSL", "SASL_SSL", "SASL_PLAINTEXT")
SASL_USER = "migrator"
SASL_PASSWORD = "migrator-dev-secret"
_STORE_PASSWORD = "migrator-dev"
_STATE_FILE = "security.json"
_VALID_DAYS = "3650"


@dataclass(frozen=True)
class Certificates:
    ca: Path  # the CA certificate (PEM): clients' `ssl.ca.location`, brokers' truststore
    keystore: Path  # the broker's key and certificate chain (PKCS12)


def certificates(root: Path | None = None) -> Certificates:
    """The dev CA and a broker keystore, generated on first use under `root` (default: the cache root)."""
    where = (root or cache_root()) / "security"
    found = Certificates(where / "ca.crt", where / "broker.p12")
    if found.ca.exists() and found.keystore.exists():
        return found
    if shutil.which("openssl") is None:
        raise EnvironmentProblem("dev-cluster --security needs `openssl` on PATH to generate its certificates")
    where.mkdir(parents=True, exist_ok=True)
    _generate(where)
    return found


def _generate(where: Path) -> None:
    """CA, broker key, broker certificate for 127.0.0.1/localhost signed by the CA, and the PKCS12 keystore;
    written to temporary names, then renamed, so a concurrent first use never sees half a set."""
    san = where / "san.ext"
    san.write_text(f"subjectAltName=IP:{HOST},DNS:localhost\n")
    ca, broker = "ca.tmp.crt", "broker.tmp.p12"
    steps = [
        f"req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out {ca} -subj /CN=migrator-dev-ca -days {_VALID_DAYS}",
        f"req -newkey rsa:2048 -nodes -keyout broker.key -out broker.csr -subj /CN={HOST}",
        f"x509 -req -in broker.csr -CA {ca} -CAkey ca.key -CAcreateserial -out broker.crt -days {_VALID_DAYS} "
        f"-extfile {san.name}",
        f"pkcs12 -export -in broker.crt -inkey broker.key -certfile {ca} -out {broker} -passout pass:{_STORE_PASSWORD}",
    ]
    for step in steps:
        args = step.split()
        done = subprocess.run(["openssl", *args], cwd=where, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise EnvironmentProblem(f"openssl {args[0]} failed generating the dev certificates: {last}")
    (where / broker).replace(where / "broker.p12")
    (where / ca).replace(where / "ca.crt")


def _jaas() -> str:
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{SASL_USER}" password="{SASL_PASSWORD}" user_{SASL_USER}="{SASL_PASSWORD}";'
    )


def broker_properties(plain_port: int, ports: Mapping[str, int], certs: Certificates) -> dict[str, object]:
    """Server properties adding the secured listeners on `ports` (protocol → port) beside PLAINTEXT."""
    listeners = ",".join([f"PLAINTEXT://{HOST}:{plain_port}"] + [f"{p}://{HOST}:{ports[p]}" for p in SECURED_PROTOCOLS])
    return {
        "listeners": listeners,
        "advertised.listeners": listeners,
        "inter.broker.listener.name": "PLAINTEXT",
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": certs.keystore,
        "ssl.keystore.password": _STORE_PASSWORD,
        "ssl.key.password": _STORE_PASSWORD,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": certs.ca,
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": _jaas(),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": _jaas(),
    }


def client_properties(protocol: str, ca: Path) -> dict[str, str]:
    """What a librdkafka client sets to reach the `protocol` listener (no `bootstrap.servers`)."""
    props = {"security.protocol": protocol}
    if "SSL" in protocol:
        props["ssl.ca.location"] = str(ca)
    if protocol.startswith("SASL"):
        props |= {"sasl.mechanism": "PLAIN", "sasl.username": SASL_USER, "sasl.password": SASL_PASSWORD}
    return props


@dataclass(frozen=True)
class SecuredListeners:
    """The secured listeners of one cluster: per protocol, each broker's address."""

    ca: str
    bootstrap: dict[str, str]  # protocol → host:port,...
    zookeeper_tls: str = ""  # host:port,... of ZooKeeper's TLS client port(s)

    def client_properties(self, protocol: str) -> dict[str, str]:
        return client_properties(protocol, Path(self.ca))

    def zookeeper_tls_properties(self) -> dict[str, str]:
        """A client of the TLS port: `zookeeper.connect` and the `zookeeper.ssl.*` keys (PEM truststore)."""
        return {
            "zookeeper.connect": self.zookeeper_tls,
            "zookeeper.ssl.client.enable": "true",
            "zookeeper.ssl.truststore.location": self.ca,
            "zookeeper.ssl.truststore.type": "PEM",
        }

    def save(self, cluster_dir: Path) -> None:
        (cluster_dir / _STATE_FILE).write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")
        for protocol in SECURED_PROTOCOLS:
            lines = {"bootstrap.servers": self.bootstrap[protocol], **self.client_properties(protocol)}
            text = "".join(f"{k}={v}\n" for k, v in lines.items())
            (cluster_dir / f"client-{protocol.lower()}.properties").write_text(text)
        if self.zookeeper_tls:
            text = "".join(f"{k}={v}\n" for k, v in self.zookeeper_tls_properties().items())
            (cluster_dir / "zookeeper-tls.properties").write_text(text)

    @classmethod
    def load(cls, cluster_dir: Path) -> SecuredListeners | None:
        """The cluster's secured listeners, None when it was started without them."""
        try:
            return cls(**json.loads((cluster_dir / _STATE_FILE).read_text()))
        except FileNotFoundError:
            return None


def _free_port_not_in(taken: set[int]) -> int:
    port = free_port()
    while port in taken:
        port = free_port()
    taken.add(port)
    return port


def zookeeper_tls_config(port: int, certs: Certificates) -> str:
    """zoo.cfg lines opening a TLS client port (Netty) with the broker certificate; a client certificate is
    accepted but not required, and client names are not checked (the CA still is)."""
    lines = {
        "secureClientPort": port,
        "secureClientPortAddress": HOST,
        "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
        "ssl.keyStore.location": certs.keystore,
        "ssl.keyStore.password": _STORE_PASSWORD,
        "ssl.keyStore.type": "PKCS12",
        "ssl.trustStore.location": certs.ca,
        "ssl.trustStore.type": "PEM",
        "ssl.clientAuth": "want",
        "ssl.hostnameVerification": "false",
    }
    return "".join(f"{k}={v}\n" for k, v in lines.items())


def plan_zookeeper_tls(zoo_cfgs: list[Path], taken: set[int]) -> str:
    """Add a TLS client port to each ZooKeeper's zoo.cfg; returns their `host:port,...`."""
    certs = certificates()
    ports = []
    for cfg in zoo_cfgs:
        port = _free_port_not_in(taken)
        with cfg.open("a") as f:
            f.write(zookeeper_tls_config(port, certs))
        ports.append(port)
    return ",".join(f"{HOST}:{p}" for p in ports)


def plan_listeners(
    cluster_dir: Path, broker_ports: list[int], taken: set[int], zookeeper_tls: str = ""
) -> list[dict[str, object]]:
    """Pick the secured ports of every broker (none of `taken`, which grows), save the cluster's
    `SecuredListeners` (with ZooKeeper's TLS port, `zookeeper_tls`), and return each broker's extra server
    properties, in `broker_ports` order."""
    certs = certificates()
    per_broker: list[dict[str, int]] = []
    for _ in broker_ports:
        per_broker.append({protocol: _free_port_not_in(taken) for protocol in SECURED_PROTOCOLS})
    bootstrap = {p: ",".join(f"{HOST}:{ports[p]}" for ports in per_broker) for p in SECURED_PROTOCOLS}
    SecuredListeners(str(certs.ca), bootstrap, zookeeper_tls).save(cluster_dir)
    return [broker_properties(plain, ports, certs) for plain, ports in zip(broker_ports, per_broker, strict=True)]
