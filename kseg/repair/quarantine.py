"""Where a run keeps what its repairs remove: one run dir under a quarantine root, one dir per
partition in it (see kseg.repair.manifest for their names and contents)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kseg.repair.manifest import new_partition_dir, new_run_dir


def default_quarantine_root(log_dir: Path) -> Path:
    log_dir = log_dir.resolve()
    return log_dir.parent / "kseg-quarantine" / log_dir.name


class Quarantine:
    """One run's quarantine under ``root``: the run dir is made when the first partition needs it
    (so it changes: a plain class, not a value)."""

    __slots__ = ("root", "run_dir")

    def __init__(self, root: Path) -> None:
        self.root = root
        self.run_dir: Path | None = None

    def partition_dir(self, partition: str) -> Path:
        if self.run_dir is None or not self.run_dir.is_dir():
            self.run_dir = new_run_dir(self.root)
        return new_partition_dir(self.run_dir, partition)


def clean_quarantine(root: Path) -> Iterator[tuple[Path, list[str]]]:
    """Remove what killed runs left under a quarantine root: temp files of a copy or manifest
    cut short (only of runs no longer running: a quarantine may be shared), and a partition or
    run dir that held nothing else. Yields (directory, names removed)."""
    from kseg.storage.atomic import remove_stale_temps

    if not root.is_dir() or root.is_symlink():
        return
    for run in sorted(root.iterdir()):
        if not run.is_dir() or run.is_symlink():
            continue
        cleaned = False
        for qdir in [*sorted(p for p in run.iterdir() if p.is_dir() and not p.is_symlink()), run]:
            removed = remove_stale_temps(qdir, only_dead_writers=True)
            if removed:
                cleaned = True
                yield qdir, removed
                _rmdir(qdir)  # nothing but the temp files: a run killed before its manifest
        if cleaned:
            _rmdir(run)


def _rmdir(d: Path) -> None:
    try:
        d.rmdir()  # only when empty
    except OSError:
        pass
