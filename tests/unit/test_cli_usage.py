"""Command-line surface: help with examples, exit codes, one line on error, nothing reaches ZooKeeper on bad input."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from migrator.cli.main import main

UNREACHABLE = "127.0.0.1:1"
COMMANDS = [
    ["set-mode"], ["get-mode"], ["history"], ["status"], ["acl", "protect"], ["acl", "show"],
    ["offsets", "export"], ["offsets", "import"], ["offsets", "diff"], ["offsets", "sync"], ["offsets", "reset"],
    ["groups"],
]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_has_an_example(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "Example:" in out and f"migrator {command[0]}" in out


def test_unknown_mode_is_refused_before_connecting(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    assert main(["set-mode", "kafak", "-z", UNREACHABLE, "-g", "orders"]) == 2
    assert time.monotonic() - started < 1  # never tried the (unreachable) ZooKeeper
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: mode must be kafka or zookeeper, not 'kafak'; nothing was written"]


@pytest.mark.parametrize("group", ["..", ".", "a/b", "", "tab\tin"])
def test_bad_group_names_are_refused(group: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["set-mode", "zookeeper", "-z", UNREACHABLE, "-g", group]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: group name")


def test_bad_topic_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["offsets", "export", "-z", UNREACHABLE, "-g", "g", "--store", "zookeeper", "-t", "a/b"]) == 2
    assert capsys.readouterr().err.startswith("error: topic name")


def test_bad_kafka_property(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "-z", UNREACHABLE, "-g", "g", "--kafka-property", "novalue"]) == 2
    assert "expected key=value" in capsys.readouterr().err


def test_missing_option_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["get-mode", "-z", UNREACHABLE]) == 2
    assert "--group" in capsys.readouterr().err


def test_sync_same_store_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["offsets", "sync", "-z", UNREACHABLE, "-g", "g", "-b", UNREACHABLE, "--from", "kafka", "--to", "kafka"]
    assert main(args) == 2
    assert "must differ" in capsys.readouterr().err


def test_import_of_a_bad_file_is_refused_before_connecting(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "offsets.csv"
    bad.write_text("topic,partition,offset\nt,0,5\nt,1,-3\n")
    assert main(["offsets", "import", "-z", UNREACHABLE, "-g", "g", "--store", "zookeeper", "-i", str(bad)]) == 2
    assert capsys.readouterr().err.strip() == "error: line 3: offset '-3' is not a non-negative integer"


@pytest.mark.parametrize("command", [["get-mode"], ["status"], ["history"], ["acl", "show"]], ids=" ".join)
def test_unreachable_zookeeper_fails_within_the_connect_timeout(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    assert main([*command, "-z", UNREACHABLE, "-g", "g", "--connect-timeout", "1"]) == 1
    assert time.monotonic() - started < 5
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: ZooKeeper at 127.0.0.1:1 did not answer within 1s"]


def test_import_of_unicode_digits_is_refused_in_one_line(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """'¹'.isdigit() is true but int('¹') fails: that was a traceback."""
    bad = tmp_path / "offsets.csv"
    bad.write_text("topic,partition,offset\nt,0,\u00b9\n")
    assert main(["offsets", "import", "-z", UNREACHABLE, "-g", "g", "--store", "zookeeper", "-i", str(bad)]) == 2
    assert capsys.readouterr().err.strip() == "error: line 2: offset '\u00b9' is not a non-negative integer"


def test_version_as_the_installed_command_prints_it() -> None:
    from importlib import metadata

    done = subprocess.run([sys.executable, "-m", "migrator", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"migrator {metadata.version('migrator')}"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell_completion_prints_a_script(shell: str) -> None:
    """The line docs/operations.md gives: eval "$(_MIGRATOR_COMPLETE=bash_source migrator)"."""
    env = {**os.environ, "_MIGRATOR_COMPLETE": f"{shell}_source"}
    done = subprocess.run([sys.executable, "-m", "migrator"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert "_MIGRATOR_COMPLETE" in done.stdout and "complete" in done.stdout


def test_completion_offers_the_commands() -> None:
    env = {**os.environ, "_MIGRATOR_COMPLETE": "bash_complete", "COMP_WORDS": "migrator off", "COMP_CWORD": "1"}
    done = subprocess.run([sys.executable, "-m", "migrator"], capture_output=True, text=True, timeout=60, env=env)
    assert "plain,offsets" in done.stdout.splitlines(), done.stdout


def test_missing_zookeeper_names_every_way_to_give_it(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.delenv("MIGRATOR_ZOOKEEPER", raising=False)
    assert main(["get-mode", "-g", "g"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: --zookeeper is required: give -z, $MIGRATOR_ZOOKEEPER or zookeeper.connect in --command-config"
    ]


def test_bad_command_config_is_one_line(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["get-mode", "-g", "g", "--command-config", str(tmp_path / "missing.properties")]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: --command-config: cannot read properties file")
