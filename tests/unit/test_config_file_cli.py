"""A legacy properties file with several mistakes: the CLI, as a subprocess, names the
file and every problem on one `error:` line, exits 2, and writes nothing (it fails before connecting)."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrator import ConfigError, ConsumerConnector
from tests.apps.run import App

BAD = """\
# a legacy consumer's file, with three mistakes
group.id=orders
offsets.storage=zookeper
auto.commit.interval.ms=soon
rebalance.max.retrys=4
"""


def test_every_problem_of_a_properties_file_is_listed_with_its_name(tmp_path: Path) -> None:
    path = tmp_path / "consumer.properties"
    path.write_text(BAD)
    app = App("-m", "migrator", "console-consumer", "-z", "127.0.0.1:1", "-g", "orders", "-t", "orders",
              "--consumer.config", path)  # fmt: skip
    assert app.wait(30) == 2, app.errors
    assert len(app.errors) == 1, app.errors
    line = app.errors[0]
    assert line.startswith(f"error: {path}"), line
    for problem in ("offsets.storage: 'zookeper'", "auto.commit.interval.ms: 'soon'", "'rebalance.max.retrys'"):
        assert problem in line, line
    assert "3 problems" in line


def test_the_connector_names_the_file_too(tmp_path: Path) -> None:
    path = tmp_path / "consumer.properties"
    path.write_text(BAD + "zookeeper.connect=127.0.0.1:1\n")
    with pytest.raises(ConfigError) as raised:
        ConsumerConnector(path)
    assert str(raised.value).startswith(f"{path}: 3 problems: "), raised.value
    assert len(raised.value.problems) == 3
