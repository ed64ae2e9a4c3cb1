"""The set-mode preflight, applied to fleet switches so that the scan never switches what set-mode refuses.

`migrator.coordination.preflight.preflight` is the one safety rule for a switch; this module only adapts
the fleet's `KafkaGroupFacts` to it.
"""

from __future__ import annotations

from migrator.coordination.preflight import preflight
from migrator.fleet.model import KafkaGroupFacts
from migrator.protocol.codecs import Mode
from migrator.protocol.group_view import GroupView


def switch_refusals(
    target: Mode, view: GroupView, kafka: KafkaGroupFacts | None, group_max_size: int | None
) -> list[str]:
    """Why switching this group to `target` is unsafe now; empty when safe."""
    group = kafka.group if kafka is not None else None
    error = None if kafka is not None else "no --bootstrap-servers given"
    if kafka is not None and kafka.error is not None:
        error = kafka.error
    verdict = preflight(target, view, group, group_max_size, kafka_error=error)
    return list(verdict.refusals)
