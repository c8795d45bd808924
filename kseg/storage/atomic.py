"""Replace a file atomically: write a temp file beside it, fsync, rename, fsync the directory."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(directory: str | Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | Path, data: bytes, *, padded_to: int | None = None) -> None:
    """Write ``data`` (zero-padded to ``padded_to`` bytes if given) to ``path`` atomically."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.kseg-tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        if padded_to is not None and padded_to > len(data):
            f.truncate(padded_to)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)
