"""The set-mode preflight, applied to fleet switches so that the scan never switches what set-mode refuses.

`migrator.coordination.preflight.preflight` is the one safety rule for a switch; this module only adapts
the fleet's `KafkaGroupFacts` to it. Should that module be missing (an older tree), a minimal local rule
stands in, so that the fleet scan still refuses legacy members and absent embedded members.
"""

from __future__ import annotations

from migrator.fleet.model import KafkaGroupFacts
from migrator.protocol.codecs import Mode
from migrator.protocol.group_view import GroupView

try:
    from migrator.coordination.preflight import preflight as _preflight
except ImportError:  # pragma: no cover - only on a tree without the operator tooling
    _preflight = None


def _fallback(target: Mode, view: GroupView, kafka: KafkaGroupFacts | None) -> list[str]:
    refusals: list[str] = []
    if not view.exists:
        refusals.append(f"group {view.group} does not exist")
    if target is Mode.KAFKA:
        if view.corrupt_members:
            refusals.append(f"{len(view.corrupt_members)} ids node(s) do not decode")
        if not view.bridges or view.legacy:
            refusals.append("not every member is a bridge connector")
        if kafka is None or kafka.group is None:
            refusals.append("the Kafka group cannot be checked")
        elif {m.consumer_id for m in view.bridges} - kafka.group.client_ids:
            refusals.append("some embedded members are not in the Kafka group")
    return refusals


def switch_refusals(
    target: Mode, view: GroupView, kafka: KafkaGroupFacts | None, group_max_size: int | None
) -> list[str]:
    """Why switching this group to `target` is unsafe now; empty when safe."""
    if _preflight is None:
        return _fallback(target, view, kafka)
    group = kafka.group if kafka is not None else None
    error = None if kafka is not None else "no --bootstrap-servers given"
    if kafka is not None and kafka.error is not None:
        error = kafka.error
    verdict = _preflight(target, view, group, group_max_size, kafka_error=error)
    return list(verdict.refusals)
