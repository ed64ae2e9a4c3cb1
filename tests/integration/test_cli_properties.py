"""A property of the whole command line (issue 14): whatever an operator types, the command ends with an
exit code from `migrator.errors.EXIT_CODES`, at most one `error:` line (exactly one when it fails), never a
traceback or an "internal error", and a command that refuses (exit 2 or 3) leaves ZooKeeper as it was.

The commands run in-process (`main(argv)`) against the session cluster, so an example costs milliseconds
unless it reaches a broker; most generated inputs fail while parsing, which is the point. Every operator
command and option is drawn from: connect strings (good, chrooted, malformed, out-of-range ports), group and
topic names (existing, missing, illegal), --kafka-property pairs, --zk-auth values, paths, numbers.
`console-consumer` always gets `consumer.timeout.ms` and a --metrics-port it cannot use, so it ends;
`fleet-scan` always gets `--rollback` of a plan file that does not load and `demo` -z without -b (even an
empty one), so neither starts Spark or a whole demo (their successful runs have their own tests). `dev-cluster` starts
JVMs and is left to tests/unit/test_devcluster_*.
"""

from __future__ import annotations

import contextlib
import io
import re
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kazoo.client import KazooClient

from migrator.cli.main import main
from migrator.errors import EXIT_CODES, EXIT_NOT_FOUND, EXIT_OK, EXIT_REFUSED
from migrator.protocol.codecs import Registration
from migrator.zk.client import connect_problem
from migrator.zk.paths import GroupPaths
from tests.helpers.cli import group_state
from tests.helpers.kafka import make_topic
from tests.helpers.zk import zk_client as open_zk

GROUP = f"prop-{uuid.uuid4().hex[:6]}"
TOPIC = f"prop-t-{uuid.uuid4().hex[:6]}"
NAME_CHARS = st.sampled_from("abcXYZ019._-")
BUSY_PORT = ""
"""A port the module fixture keeps listening on (as root, ports 1-5 would be free to bind)."""


@pytest.fixture(scope="module")
def world(cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, KazooClient, Path]]:
    """One seeded group and topic for the whole property run, and a directory for files."""
    make_topic(cluster, TOPIC, partitions=2)
    tmp = tmp_path_factory.mktemp("cli-props")
    (tmp / "offsets.csv").write_text(f"topic,partition,offset\n{TOPIC},0,3\n")
    (tmp / "garbage.json").write_text("{not json")
    with open_zk(cluster) as zk, socket.socket() as busy:
        busy.bind(("", 0))  # every address, as the metrics server binds: console-consumer must refuse it
        busy.listen()
        global BUSY_PORT
        BUSY_PORT = str(busy.getsockname()[1])
        p = GroupPaths(GROUP)
        zk.create(p.offset(TOPIC, 0), b"4", makepath=True)
        zk.create(p.member(f"{GROUP}_b1"), Registration({TOPIC: 1}).encode(), makepath=True, ephemeral=True)
        zk.create(p.migration_member(f"{GROUP}_b1"), Registration({TOPIC: 1}).encode(), makepath=True, ephemeral=True)
        yield cluster, zk, tmp


def connect_strings(cluster: Any) -> st.SearchStrategy[str]:
    port = st.integers(min_value=-5, max_value=70000).map(str)
    return st.one_of(
        st.just(cluster.zookeeper),
        st.builds(lambda c: cluster.zookeeper + "/" + c, st.text(NAME_CHARS, min_size=1, max_size=8)),
        st.builds(lambda p: f"127.0.0.1:{p}", port | st.text(max_size=4)),
        st.text(max_size=12),
        st.sampled_from(["", ",", "/", f"{cluster.zookeeper}/", f"{cluster.zookeeper}//x", " :1"]),
    )


names = st.one_of(
    st.just(GROUP),
    st.text(NAME_CHARS, min_size=1, max_size=12),
    st.sampled_from(["", ".", "..", "a/b", "x" * 250, "sp ace", "é"]),
)
topics = st.one_of(st.just(TOPIC), names)
properties = st.one_of(
    st.sampled_from(["client.id=x", "no.such.prop=1", "security.protocol=SASL_SSL", "novalue", "=x", "a=b=c"]),
    st.builds(lambda k, v: f"{k}={v}", st.text(max_size=10), st.text(max_size=6)),
)
zk_auths = st.one_of(
    st.sampled_from(["digest:ops:s3cret", "ops:s3cret", "digest:ops", "sasl", "sasl:u", "digest::", ""]),
    st.text(max_size=12),
)
numbers = st.one_of(st.integers(-3, 5).map(str), st.floats(-1, 3).map(str) | st.just("nan"), st.text(max_size=4))


def command_lines(cluster: Any, tmp: Path) -> st.SearchStrategy[list[str]]:
    files = [tmp / "offsets.csv", tmp / "garbage.json", tmp / "missing" / "x.csv", tmp]
    paths = st.one_of(st.sampled_from([str(f) for f in files]), st.text(max_size=10))
    z, g, t = connect_strings(cluster), names, topics
    opt = st.lists(
        st.one_of(
            st.tuples(st.just("--zk-auth"), zk_auths),
            st.tuples(st.just("--kafka-property"), properties),
            st.tuples(st.just("-b"), st.sampled_from([cluster.bootstrap_servers, "127.0.0.1:1", "nohost", ""])),
            st.tuples(st.just("--connect-timeout"), st.sampled_from(["0.5", "1", "0", "-1", "x"])),
            st.tuples(st.just("--json")),
            st.tuples(st.just("--force")),
            st.tuples(st.just("--dry-run")),
            st.tuples(st.just("--timeout"), numbers),
        ),
        max_size=3,
    ).map(lambda pairs: [item for pair in pairs for item in pair])
    heads = st.sampled_from(
        [
            ["get-mode"], ["history"], ["status"], ["acl", "show"],
            ["acl", "protect", "--admin", "digest:ops:s3cret"], ["acl", "protect", "--admin", "ops"],
            ["set-mode", "kafka"], ["set-mode", "zookeeper"], ["set-mode", "kafak"],
            ["offsets", "export", "--store", "zookeeper"], ["offsets", "export", "--store", "kafka"],
            ["offsets", "diff"], ["offsets", "sync", "--from", "zookeeper", "--to", "kafka"],
            ["offsets", "sync", "--from", "kafka", "--to", "kafka"],
            ["cleanup"], ["cleanup", "--abandoned", "--abandoned-after", "0s"], ["cleanup", "--restore", str(files[1])],
        ]
    )  # fmt: skip
    operator = st.builds(
        lambda head, zs, gs, extra: [*head, "-z", zs, "-g", gs, "--connect-timeout", "1", *extra], heads, z, g, opt
    )
    offsets_io = st.builds(
        lambda how, zs, gs, path, topic, extra: [
            "offsets", *how, path, "-z", zs, "-g", gs, "--connect-timeout", "1", *(["-t", topic] if topic else []),
            *extra,
        ],
        st.sampled_from([["export", "--store", "zookeeper", "-o"], ["import", "--store", "zookeeper", "-i"],
                         ["import", "--store", "kafka", "--execute", "-i"]]),
        z, g, paths, st.none() | t, opt,
    )  # fmt: skip
    console = st.builds(
        lambda zs, gs, topic, port, extra: [
            "console-consumer", "-z", zs, "-g", gs, "-t", topic, "--connect-timeout", "1", "--consumer-property",
            "consumer.timeout.ms=300", "--metrics-port", port, *extra,
        ],
        z, g, t, st.just(BUSY_PORT) | numbers.filter(lambda n: not re.fullmatch(r"\s*[0-9]+\s*", n) or int(n) < 1), opt,
    )  # fmt: skip
    fleet = st.builds(
        lambda zs, plan, stable, extra: ["fleet-scan", "-z", zs, "--rollback", plan, "--stable-for", stable, *extra],
        z, paths, numbers, opt,
    )  # fmt: skip
    demo = st.builds(lambda zs: ["demo", "--quick", "-z", zs, "-o", str(tmp / "demo")], z)
    return st.one_of(operator, operator, offsets_io, console, fleet, demo)


@pytest.fixture(scope="module")
def strategy(world: tuple[Any, KazooClient, Path]) -> st.SearchStrategy[list[str]]:
    cluster, _zk, tmp = world
    return command_lines(cluster, tmp)


def _written(zk: KazooClient, argv: list[str]) -> object:
    """Where this command line could write (its group under its chroot): walking all of ZooKeeper per
    example would cost more than the commands."""
    value = {a: argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-z", "-g")}
    chroot = value.get("-z", "").partition("/")[2]
    chroot = f"/{chroot}" if chroot and not connect_problem(value["-z"]) else ""
    group = value.get("-g", GROUP)
    return group_state(zk, group if group and "/" not in group and group not in (".", "..") else GROUP, chroot)


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_no_input_gets_a_traceback_or_an_undocumented_exit(
    world: tuple[Any, KazooClient, Path], strategy: st.SearchStrategy[list[str]]
) -> None:
    _cluster, zk, _tmp = world

    @settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(strategy)
    def holds(argv: list[str]) -> None:
        before = _written(zk, argv)
        code, out, err = _run(argv)
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert code in EXIT_CODES, (argv, code, err)
        assert "Traceback" not in out + err and "internal error" not in err, (argv, err)
        assert len(errors) <= 1, (argv, err)
        if code != EXIT_OK:
            assert errors or "--dry-run" in argv, (argv, code, out, err)
        if code in (EXIT_REFUSED, EXIT_NOT_FOUND):
            assert _written(zk, argv) == before, (argv, code, err)

    holds()
