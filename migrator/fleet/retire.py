"""The reads behind the retirement verdict (`fleet-scan --readiness`): what each ensemble's servers say about
its sessions and clients, and which of its groups an archive directory holds, beside the rows the scan read.
The verdict itself is pure: `migrator.fleet.readiness`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from migrator.errors import MigratorError
from migrator.fleet.model import FleetRow
from migrator.fleet.readiness import EnsembleUse, Readiness, cleaned_count, ensemble_use, readiness
from migrator.fleet.scan import list_groups
from migrator.zk.archive import read_archive
from migrator.zk.connect_string import chroot_of
from migrator.zk.session import ZkSession
from migrator.zk.usage import broker_sessions, own_session, server_use


def verdicts(
    ensembles: Sequence[str],
    rows: Sequence[FleetRow],
    zks: Mapping[str, ZkSession],
    scanned: Callable[[str], bool],
    timeout_s: float,
    archive_dir: str | None,
) -> list[Readiness]:
    """The verdict of each ensemble (each with its session in `zks`); `scanned`: the --include/--exclude filter."""
    return [readiness(e, rows, read_use(zks, e, scanned, timeout_s, archive_dir)) for e in ensembles]


def read_use(
    zks: Mapping[str, ZkSession],
    ensemble: str,
    scanned: Callable[[str], bool],
    timeout_s: float,
    archive_dir: str | None,
) -> EnsembleUse:
    """What the ensemble's servers say about its sessions and clients (the run's own sessions, on `zks`, apart)."""
    zk = zks[ensemble]
    present = list_groups(zk)
    servers = server_use(ensemble, timeout_s=min(timeout_s, 5.0))
    own = [own_session(c) for c in zks.values()]
    return ensemble_use(chroot_of(ensemble), servers.clients, servers.ephemerals, broker_sessions(zk), own,
                        unscanned_groups=sum(1 for g in present if not scanned(g)),
                        cleaned=_cleaned(archive_dir, ensemble, present))  # fmt: skip


def _cleaned(archive_dir: str | None, ensemble: str, present: list[str]) -> int | None:
    """With an archive directory: how many groups of the ensemble were archived there and are gone (None without)."""
    if not archive_dir or not Path(archive_dir).is_dir():
        return None
    return cleaned_count(archived_groups(Path(archive_dir)), ensemble, present)


def archived_groups(directory: Path) -> list[tuple[str, str]]:
    """`(zookeeper, group)` of every archive in `directory` (other JSON files passed over)."""
    archived = []
    for path in sorted(directory.glob("*.json")):
        try:
            archive = read_archive(path)
        except MigratorError:  # not an archive
            continue
        archived.append((archive.zookeeper, archive.group))
    return archived
