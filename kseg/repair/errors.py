"""How a repair or a restore stops: what kseg.repair raises besides the manifest's own errors
(kseg.repair.manifest.ManifestError)."""

from __future__ import annotations

from pathlib import Path

from kseg.format.errors import KsegError


class RepairError(KsegError):
    """The files changed in a way the manifest does not explain: stop, change nothing more."""


class MovedOn(RepairError):
    """(restore) The partition is no longer as the repair left it: a broker wrote to it since."""


class RepairFailed(KsegError):
    """A repair stopped. ``changed``: whether the partition was touched (then it is resumable)."""

    def __init__(self, message: str, qdir: Path | None, changed: bool) -> None:
        super().__init__(message)
        self.qdir, self.changed = qdir, changed
