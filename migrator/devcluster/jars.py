"""Fetch the Kafka/ZooKeeper jars once per user with Maven, safely under concurrency.

Maven Central is the only artifact source the project may assume, so the broker comes from the
`pom.xml` next to this module rather than from a tarball, and so does the Scala old consumer
(`pom-old-consumer.xml`, Kafka 1.1.1) that the interop tests run beside ours. The copy goes to a
temporary sibling directory and is renamed into place under an exclusive lock: two test runs fetching
at the same time neither collide nor see a half-filled directory.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from migrator.devcluster.paths import KAFKA_VERSION, OLD_CONSUMER_VERSION, cache_root
from migrator.errors import EnvironmentProblem

COMPLETE_MARKER = ".complete"
FETCH_TIMEOUT_S = 600


@dataclass(frozen=True, slots=True)
class JarSet:
    """One artifact and its runtime dependencies, fetched by one pom into its own cache directory."""

    what: str  # for messages: "Kafka", "Scala old consumer"
    pom: str  # resource next to this module
    version: str  # passed to the pom as -Dkafka.version
    directory: str  # cache directory name before "-<version>"
    main_jar: str  # glob that proves a fetch complete

    def target(self) -> Path:
        return cache_root() / f"{self.directory}-{self.version}" / "libs"


BROKER = JarSet("Kafka", "pom.xml", KAFKA_VERSION, "kafka", "kafka_2.13-*.jar")
OLD_CONSUMER = JarSet(
    "Scala old consumer", "pom-old-consumer.xml", OLD_CONSUMER_VERSION, "kafka_2.12", "kafka_2.12-*.jar"
)


def require_java() -> str:
    java = shutil.which("java")
    if not java:
        raise EnvironmentProblem("java not found on PATH: install a JDK 17 (e.g. apt-get install openjdk-17-jdk)")
    return java


def require_mvn() -> str:
    mvn = shutil.which("mvn")
    if not mvn:
        raise EnvironmentProblem(
            "mvn not found on PATH: install Maven 3.8+ (e.g. apt-get install maven) to fetch the Kafka jars"
        )
    return mvn


def jars_present(target: Path, jars: JarSet = BROKER) -> bool:
    return (target / COMPLETE_MARKER).exists() and any(target.glob(jars.main_jar))


def ensure_jars(version: str = KAFKA_VERSION, quiet: bool = True) -> Path:
    """Return the directory holding every runtime jar of the broker, fetching them on first use."""
    return fetch_jar_set(replace(BROKER, version=version), quiet)


def ensure_old_consumer_jars(quiet: bool = True) -> Path:
    """Return the directory holding the Kafka 1.1.1 jars (the Scala old consumer), fetching them on first use."""
    return fetch_jar_set(OLD_CONSUMER, quiet)


def fetch_jar_set(jars: JarSet, quiet: bool = True) -> Path:
    target = jars.target()
    if jars_present(target, jars):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = target.parent / "fetch.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a concurrent fetch finishes first; then we see its result
        if jars_present(target, jars):
            return target
        _fetch(target, jars, quiet)
    return target


def _fetch(target: Path, jars: JarSet, quiet: bool) -> None:
    mvn = require_mvn()
    version = jars.version
    staging = Path(tempfile.mkdtemp(prefix="libs-", dir=target.parent))
    try:
        with resources.as_file(resources.files("migrator.devcluster") / jars.pom) as pom:
            cmd = [
                mvn,
                "-B",
                "-f",
                str(pom),
                "dependency:copy-dependencies",
                f"-DoutputDirectory={staging}",
                "-DincludeScope=runtime",
                f"-Dkafka.version={version}",
            ]
            if quiet:
                cmd.insert(1, "-q")
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S)
            except subprocess.TimeoutExpired as exc:
                raise EnvironmentProblem(
                    f"fetching the {jars.what} {version} jars with Maven took over {FETCH_TIMEOUT_S}s: "
                    "check network access to Maven Central (repo.maven.apache.org)"
                ) from exc
        if proc.returncode != 0 or not any(staging.glob(jars.main_jar)):
            tail = _last_error_line(proc.stdout + proc.stderr)
            raise EnvironmentProblem(
                f"fetching the {jars.what} {version} jars with Maven failed ({tail}): "
                "check network access to Maven Central and ~/.m2/settings.xml"
            )
        (staging / COMPLETE_MARKER).write_text(version + "\n")
        if target.exists():
            shutil.rmtree(target)  # an incomplete earlier attempt
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _last_error_line(output: str) -> str:
    errors = [line.strip() for line in output.splitlines() if "ERROR" in line]
    line = errors[0] if errors else (output.strip().splitlines() or ["no output"])[-1]
    return line[:200]


def classpath(libs: Path) -> str:
    return str(libs / "*")
