"""Where a run keeps what its repairs remove: one run dir under a quarantine root, one dir per
partition in it (see kseg.repair.manifest for their names and contents)."""

from __future__ import annotations

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
