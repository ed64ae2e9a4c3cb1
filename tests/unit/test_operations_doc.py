"""docs/operations.md says what the code does: its exit codes, the commands each table covers, every default
and every `--json` field are compared with the click commands and the functions that build the JSON."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from kazoo.security import ACL, Id

from migrator.cli import acl as acl_cli
from migrator.cli import cleanup as cleanup_cli
from migrator.cli import cutover as cutover_cli
from migrator.cli import modes as modes_cli
from migrator.cli import offsets as offsets_cli
from migrator.cli.main import _register, cli
from migrator.errors import EXIT_CODES
from migrator.ops import offsets as ops
from migrator.ops.cleanup import CleanupPlan, Outcome
from migrator.ops.cutover import CutoverResult, StepDone
from migrator.ops.groups import group_row
from migrator.ops.reset import ResetRow
from migrator.protocol.codecs import AuditEntry, ModeNode
from migrator.protocol.cutover import CutoverFacts, Direction, Fence, Step
from migrator.protocol.group import Group
from migrator.protocol.group_view import GroupView
from migrator.protocol.lifecycle import GroupTree, Rule
from migrator.protocol.partition import TopicPartition

DOC = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
TP = TopicPartition("t", 0)


def section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"\n{title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def table_rows(text: str) -> list[list[str]]:
    """The cells of every table row (without header and rule rows)."""
    rows = [line.strip().strip("|").split("|") for line in text.splitlines() if line.startswith("|")]
    return [[c.strip() for c in row] for row in rows if not set("".join(row)) <= set("-: ")]


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def command_paths(command: click.Command = cli, path: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    if isinstance(command, click.Group):
        _register()
        for name, sub in sorted(command.commands.items()):
            yield from command_paths(sub, (*path, name))
    else:
        yield " ".join(path), command


def shown_default(option: click.Option) -> str | None:
    """The default as `--help` shows it; None for options without a meaningful one."""
    value = option.default
    if option.is_flag or value is None or value in ((), "") or type(value).__name__ == "Sentinel":
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def code_defaults() -> set[tuple[str, str, str]]:
    found = set()
    for path, command in [("migrator", cli), *command_paths()]:
        for param in command.params:
            if isinstance(param, click.Option) and (default := shown_default(param)) is not None:
                found.add((path, param.opts[0], default))
    return found


def test_every_default_is_documented_and_every_documented_default_is_real() -> None:
    rows = table_rows(section("## Defaults"))[1:]
    documented = {(ticked(c)[0], ticked(o)[0], ticked(d)[0]) for c, o, d in rows}
    assert documented == code_defaults()


def test_exit_codes_are_the_codes_the_code_defines() -> None:
    codes = {int(ticked(row[0])[0]) for row in table_rows(section("### Exit codes"))[1:] if row[0][1:-1].isdigit()}
    assert codes == EXIT_CODES


def test_the_per_command_exit_table_covers_every_command() -> None:
    text = section("### Exit codes")
    per_command = table_rows(text[text.index("Per command:") :])[1:]
    documented = {name for row in per_command for name in ticked(row[0])}
    real = {path for path, _ in command_paths()}
    for path in real:
        assert path in documented or path.split()[0] in documented, f"{path} has no row in the exit code table"
    for name in documented:
        assert any(path == name or path.startswith(f"{name} ") for path in real), f"{name} is not a command"


def json_fields_in_code() -> dict[str, set[str]]:
    rows = [ResetRow(TP, 1, 2)]
    plan = offsets_cli.plan_doc("g", "kafka", {TP: 1}, True)
    entry = AuditEntry(timestamp_ms=1, who="w", from_mode=None, to_mode="kafka", forced=False, reason="r")
    reset = offsets_cli.reset_doc("g", "zookeeper", rows, False)
    cleanup_plan = CleanupPlan("g", Rule.FINISHED, None, GroupTree("g"), (), 0)
    return {
        "set-mode": set(modes_cli._SetModeOutput(True, {"group": "g", "to": "kafka", "dry_run": True}).doc),
        "get-mode": set(modes_cli.mode_doc("g", ModeNode.absent(), None, "scala")),
        "history": set(modes_cli.history_doc("n", entry)) | set(modes_cli.history_doc("n", None)),
        "offsets diff": set(offsets_cli.diff_doc(ops.DiffRow(TP, 1, 2))),
        "offsets import": set(plan) | set(plan["offsets"][0]),
        "offsets sync": set(plan) | set(plan["offsets"][0]),
        "offsets reset": set(reset) | set(reset["offsets"][0]),
        "groups": set(group_row(GroupView(group="g"), None).to_dict()),
        "acl show": set(acl_cli.acl_doc(ACL(31, Id("world", "anyone")))),
        "cutover": cutover_fields(),
        "cleanup": set(cleanup_cli.cleanup_doc(cleanup_plan, Path("a.json"), Outcome.DRY_RUN, True))
        | set(cleanup_cli.restore_doc("g", Path("a.json"), 0, True)),
    }


def cutover_fields() -> set[str]:
    group = Group(GroupView(group="g"), kafka_committed={TP: 1})
    facts = CutoverFacts(group, Fence(True, False), 0, True)
    doc = cutover_cli.result_doc(CutoverResult(Direction.FORWARD, facts, None, False, (StepDone(Step.FENCE, 0, 0),)))
    return set(doc) | set(doc["steps"][0]) | set(doc["resume_at"][0])


@pytest.mark.parametrize("command", sorted(json_fields_in_code()))
def test_json_fields_are_documented(command: str) -> None:
    documented = {ticked(row[0])[0]: set(ticked(row[2])) for row in table_rows(section("## JSON output"))[1:]}
    assert documented[command] == json_fields_in_code()[command]


def test_every_json_option_is_in_the_json_table() -> None:
    with_json = {path for path, c in command_paths() if any(p.name == "as_json" for p in c.params)}
    documented = {ticked(row[0])[0] for row in table_rows(section("## JSON output"))[1:]}
    assert with_json - {"status"} == documented
