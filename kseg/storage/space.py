"""Free space, checked before a writing command changes anything (statvfs)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

# room kept for manifests, directory entries and rounding to blocks
SLACK_BYTES = 1 << 20


def existing_ancestor(path: str | Path) -> Path:
    """``path`` or the nearest directory above it that exists (a quarantine may not exist yet)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def device(path: str | Path) -> int:
    return existing_ancestor(path).stat().st_dev


def free_bytes(path: str | Path) -> int:
    st = os.statvfs(existing_ancestor(path))
    return st.f_bavail * st.f_frsize


class NoSpace(Exception):
    def __init__(self, path: Path, needed: int, free: int) -> None:
        self.path, self.needed, self.free = path, needed, free
        super().__init__(
            f"{path}: not enough free space: {needed} bytes needed, {free} free; nothing was "
            "changed: free space there and re-run"
        )


def check_space(needs: Iterable[tuple[Path, int]]) -> None:
    """Raise NoSpace unless every filesystem has room for the bytes to be written on it.

    ``needs`` lists (a path on the filesystem, bytes to be written there); paths on the same
    filesystem add up.
    """
    per_dev: dict[int, tuple[Path, int]] = {}
    for path, n in needs:
        dev = device(path)
        first, total = per_dev.get(dev, (path, 0))
        per_dev[dev] = (first, total + n)
    for path, total in per_dev.values():
        need = total + SLACK_BYTES
        free = free_bytes(path)
        if free < need:
            raise NoSpace(existing_ancestor(path), need, free)
