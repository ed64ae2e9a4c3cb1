"""`migrator cutover`: a fenced move to Kafka coordination for groups whose members cannot run a bridge."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from typing import Any

import click

from migrator.cli.common import (
    Connection,
    connection_options,
    echo_json,
    find_brokers,
    group_option,
    json_option,
)
from migrator.cli.common import zookeeper as open_zookeeper
from migrator.cli.progress import ProgressLine
from migrator.errors import EXIT_OK, Interrupted, UsageError
from migrator.ops import modes
from migrator.ops.cutover import CutoverResult, Runner, StepDone, read_zookeeper
from migrator.ops.groups import require_exists
from migrator.protocol.cutover import Direction, Step
from migrator.protocol.partition import TopicPartition
from migrator.table import align
from migrator.zk.client import digest_acl_id

DONE_TEXT = {
    Step.FENCE: "fenced: members can no longer register under ids",
    Step.WAIT_EMPTY: "empty: every legacy member left and no owner node remains",
    Step.CARRY_TO_KAFKA: "offsets carried to Kafka (max of both stores) and read back",
    Step.RECORD_KAFKA: "mode recorded: kafka (audit: cutover)",
    Step.CARRY_TO_ZOOKEEPER: "offsets carried to ZooKeeper (max of both stores) and read back",
    Step.RECORD_ZOOKEEPER: "mode recorded: zookeeper (audit: cutover rollback)",
    Step.LIFT_FENCE: "fence lifted: members may register again",
}


@click.command("cutover")
@connection_options()
@group_option
@click.option("--rollback", is_flag=True, help="Carry the offsets back to ZooKeeper and lift the fence.")
@click.option("--dry-run", is_flag=True, help="Show the steps left to do; write nothing.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=300.0,
    show_default=True,
    callback=lambda _ctx, _param, value: _finite(value),
    help="Seconds to wait for the legacy members to leave; the fence stays on expiry (run again to go on).",
)
@json_option
def cutover_cmd(conn: Connection, group: str, rollback: bool, dry_run: bool, timeout: float, as_json: bool) -> int:
    """Move a group whose members are no bridges (Scala, Go, kafka-node, pykafka consumers) to Kafka.

    Steps, each skipped when already in place: fence (an ACL on ids denies members CREATE, so none can
    register again; needs the admin identity as --zk-auth), wait until every legacy member left and no
    owner node remains (stop the old deployment meanwhile), carry the offsets to Kafka (max of both
    stores, refused while the Kafka group has live members), record the mode kafka (audit "cutover").
    Interrupted, it goes on where it stopped when run again. --rollback, once the Kafka group is empty,
    carries the offsets back to ZooKeeper, records the mode zookeeper and lifts the fence. Refused (exit 2)
    for bridges (use set-mode), a mix of bridges and legacy members, and without --zk-auth.

    \b
    Example:
      migrator cutover -z 127.0.0.1:2181 -g orders --zk-auth digest:ops:s3cret --dry-run
      migrator cutover -z 127.0.0.1:2181 -g orders --zk-auth digest:ops:s3cret --timeout 600
      migrator cutover -z 127.0.0.1:2181 -g orders --zk-auth digest:ops:s3cret --rollback
    """
    if conn.zk_auth is not None:
        digest_acl_id(conn.zk_auth)  # the fence names a digest identity: refuse any other before connecting
    direction = Direction.ROLLBACK if rollback else Direction.FORWARD
    line = ProgressLine(sys.stderr)
    done: list[Step] = []
    with open_zookeeper(conn) as zk:
        first = read_zookeeper(zk, group)
        require_exists(zk, first[0])
        brokers = find_brokers(conn, zk, first[0])
        if brokers.admin is None:
            raise UsageError(f"cutover needs the Kafka group: {brokers.missing}; give --bootstrap-server")
        runner = Runner(
            zk, brokers.admin, group, conn.zk_auth, modes.who_am_i(conn.zk_auth), timeout,
            on_progress=line.show if line.enabled else None, on_step=_step_printer(as_json, line, done),
        )  # fmt: skip
        try:
            result = runner.run(direction, dry_run=dry_run, first=first)
        except KeyboardInterrupt:
            line.clear()
            raise Interrupted(_interrupted(conn, group, rollback, done)) from None
        finally:
            line.clear()
    if as_json:
        echo_json(result_doc(result))
    else:
        _say(result, conn)
    return EXIT_OK


def _finite(seconds: float) -> float:
    """`nan` passes FloatRange(min=0) and would make the wait endless."""
    if math.isnan(seconds) or math.isinf(seconds):
        raise UsageError(f"--timeout: {seconds} is not a number of seconds")
    return seconds


def _step_printer(as_json: bool, line: ProgressLine, steps: list[Step]) -> Callable[[StepDone], None]:
    """Says each step as it is done (not with --json) and notes it in `steps`."""

    def show(done: StepDone) -> None:
        steps.append(done.step)
        if not as_json:
            line.clear()
            click.echo(f"{DONE_TEXT[done.step]} ({done.seconds:.2f}s)")

    return show


def _interrupted(conn: Connection, group: str, rollback: bool, done: list[Step]) -> str:
    again = f"migrator cutover -z {conn.zookeeper} -g {group}{' --rollback' if rollback else ''} --zk-auth …"
    steps = f"done by this run: {', '.join(s.value for s in done)}" if done else "no step done by this run"
    return (
        f"interrupted ({steps}); every step is written whole or not at all and is never repeated: run `{again}` "
        "to go on where it stopped"
    )


def _offsets_doc(offsets: Mapping[TopicPartition, int]) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partition": tp.partition, "offset": o} for tp, o in sorted(offsets.items())]


def _state(result: CutoverResult) -> str:
    if result.dry_run and result.planned:
        return "planned"
    return "cut-over" if result.direction is Direction.FORWARD else "rolled-back"


def next_text(result: CutoverResult) -> str:
    """What the operator does next, and when."""
    group = result.facts.group.name
    if result.dry_run and result.planned:
        return "run the command without --dry-run"
    if result.direction is Direction.FORWARD:
        return (
            f"now start the Kafka consumers with group.id={group}: they resume at the committed offsets shown; "
            "no old consumer can register while the fence stays (`cutover --rollback` goes back)"
        )
    return f"now start the old consumers of {group} again: they resume at the ZooKeeper offsets shown"


def _step_doc(done: StepDone) -> dict[str, Any]:
    return {
        "step": done.step.value,
        "started_s": round(done.started_s, 3),
        "seconds": round(done.seconds, 3),
        "offsets_written": len(done.offsets),
    }


def result_doc(result: CutoverResult) -> dict[str, Any]:
    """`cutover --json`."""
    return {
        "group": result.facts.group.name,
        "direction": result.direction.value,
        "dry_run": result.dry_run,
        "dialect": result.dialect,
        "state": _state(result),
        "steps": [_step_doc(d) for d in result.done],
        "planned": [s.value for s in result.planned],
        "fenced": result.facts.fence.fenced,
        "resume_at": _offsets_doc(result.resume_at),
        "next": next_text(result),
    }


def _say(result: CutoverResult, conn: Connection) -> None:
    group = result.facts.group.name
    if result.dry_run and result.planned:
        click.echo(f"dry run: {group}: steps left: " + ", ".join(s.value for s in result.planned))
        click.echo("nothing written")
        return
    if not result.done:
        click.echo(f"{group}: already {_state(result)}; nothing written")
    rows = [("partition", "resumes at"), *((str(tp), str(o)) for tp, o in sorted(result.resume_at.items()))]
    click.echo("\n".join(align(rows, right=(1,))))
    click.echo(next_text(result))


commands: list[click.Command] = [cutover_cmd]
