"""A per-user class-data-sharing archive for each kind of dev-cluster JVM (ZooKeeper, each broker version).

Loading and verifying a broker's classes is about a third of the CPU its start takes; from an archive (JDK's
AppCDS) the classes are mapped ready-made. A JVM started without an archive writes one when it exits
(`-XX:ArchiveClassesAtExit`) into its cluster's directory; `install` moves it into the cache once a JVM has
loaded it without error (a torn archive crashes the JVM that maps it, so none is installed unchecked).
The archive is keyed by the JVM binary and the jars: another JDK or jar set gets its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from migrator.devcluster.paths import cache_root

SUFFIX = ".jsa"


def archive_path(java: str, libs: Path, main: str) -> Path:
    """Where the archive of `main` run by `java` on the jars in `libs` lives in the cache."""
    binary = Path(shutil.which(java) or java).resolve()
    try:
        stamp = str(binary.stat().st_mtime_ns)
    except OSError:
        stamp = ""
    jars = sorted(p.name for p in libs.glob("*.jar"))
    key = hashlib.sha256("\0".join([str(binary), stamp, str(libs), main, *jars]).encode()).hexdigest()[:16]
    return cache_root() / "class-archives" / f"{main.rsplit('.', 1)[-1]}-{key}{SUFFIX}"


def jvm_options(archive: Path, dump_to: Path) -> list[str]:
    """Use the installed archive, or write one to `dump_to` when this JVM exits."""
    if archive.is_file():
        return [f"-XX:SharedArchiveFile={archive}"]
    return [f"-XX:ArchiveClassesAtExit={dump_to}"]


def install(java: str, libs: Path, archive: Path, dumped: Path) -> None:
    """Move the archive a JVM wrote at its exit into the cache, if none is there yet and a JVM on the same jars
    maps it without error; never raises (without an archive a JVM only starts slower)."""
    if archive.exists() or not dumped.is_file():
        return
    staged = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")  # same file system: the rename is atomic
    try:
        check = subprocess.run(
            [
                java,
                "-Xshare:auto",
                f"-XX:SharedArchiveFile={dumped}",
                "-XX:-CreateCoredumpOnCrash",
                "-cp",
                f"{libs}/*",
                "-version",
            ],
            capture_output=True,
            timeout=60,
            cwd=dumped.parent,
        )  # a crash report lands beside it
        if check.returncode != 0:
            return
        archive.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(dumped, staged)
        os.replace(staged, archive)
    except (OSError, subprocess.SubprocessError):
        return
    finally:
        with contextlib.suppress(OSError):
            staged.unlink(missing_ok=True)
