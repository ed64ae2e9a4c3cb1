"""The demo's picture: who owned each partition over time, one row per partition, one colour per member
(blues: legacy connectors, oranges: bridges, greens: plain Kafka consumers), each step a vertical line.

ZooKeeper owners come from the observer's owners timeline; plain consumers own through Kafka, so their rows
come from their own assign/revoke callbacks.
"""

from __future__ import annotations

import importlib.util
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from migrator.demo.steps import Step
from migrator.demo.workload import MemberInfo, MemberKind
from migrator.observe import OwnerInterval

Segment = tuple[str, int, int, int | None]  # (member name, partition, start_ns, end_ns)
KIND_COLOURS = {MemberKind.LEGACY: "Blues", MemberKind.BRIDGE: "Oranges", MemberKind.PLAIN: "Greens"}
_Colour = str | tuple[float, float, float, float]
"""A matplotlib colour: a name, or RGBA as a colormap returns it."""
PLOT_HINT = "no timeline.png: matplotlib is not installed (pip install 'migrator[plot]')"


def available() -> bool:
    """matplotlib is an optional extra: without it the demo still runs and judges, it only draws nothing."""
    return importlib.util.find_spec("matplotlib") is not None


def segments(
    ownership: Iterable[OwnerInterval],
    plain_assigned: Mapping[str, Iterable[tuple[str, int, int, int]]],
    members: Mapping[str, MemberInfo],
) -> list[Segment]:
    by_consumer_id = {m.consumer_id: m.name for m in members.values() if m.kind.in_zookeeper}
    out: list[Segment] = []
    for iv in ownership:
        name = by_consumer_id.get(iv.member, "other")
        out.append((name, iv.partition, iv.start_ns, iv.end_ns))
    for name, assigned in plain_assigned.items():
        out.extend((name, p, start, end) for _t, p, start, end in assigned)
    return out


def _colours(members: Mapping[str, MemberInfo]) -> dict[str, _Colour]:
    from matplotlib import colormaps

    by_kind: dict[MemberKind, list[str]] = {}
    for m in members.values():
        by_kind.setdefault(m.kind, []).append(m.name)
    colours: dict[str, _Colour] = {"other": "grey"}
    for kind, names in by_kind.items():
        cmap = colormaps[KIND_COLOURS[kind]]
        for i, name in enumerate(names):
            colours[name] = cmap(0.45 + 0.45 * i / max(1, len(names) - 1))
    return colours


def draw(
    path: Path,
    segs: Sequence[Segment],
    steps: Sequence[Step],
    members: Mapping[str, MemberInfo],
    partitions: int,
    start_ns: int,
    end_ns: int,
    title: str,
) -> None:
    """Write the PNG (matplotlib's Agg backend: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.patches import Patch

    colours = _colours(members)
    fig, ax = plt.subplots(figsize=(14, 1.2 + 0.35 * partitions))
    for name, p, s, e in segs:
        left = (s - start_ns) / 1e9
        width = ((e if e is not None else end_ns) - s) / 1e9
        ax.broken_barh([(left, width)], (p - 0.4, 0.8), facecolors=colours.get(name, "grey"))
    for st in steps:
        x = (st.trigger_ns - start_ns) / 1e9
        ax.axvline(x, color="black", linewidth=0.8, linestyle="--")
        ax.text(x, partitions - 0.3, f" {st.number}", fontsize=8, va="bottom")
    ax.set_ylim(-0.6, partitions + 0.4)
    ax.set_xlim(0, (end_ns - start_ns) / 1e9)
    ax.set_yticks(range(partitions))
    ax.set_ylabel("partition")
    ax.set_xlabel("seconds since the group started (dashed: step triggers)")
    ax.set_title(title)
    handles = [Patch(color=colours[m.name], label=f"{m.name} ({m.kind})") for m in members.values()]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    caption = "   ".join(f"{st.number}: {st.action}" for st in steps)
    fig.text(0.01, 0.005, "\n".join(textwrap.wrap(caption, 190)), fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, 0.06 + 0.02 * (len(caption) // 190), 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
