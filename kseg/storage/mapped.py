"""Read-only memory maps of files (an empty file maps to b"")."""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def mapped(path: str | Path, *, sequential: bool = False) -> Iterator[bytes | mmap.mmap]:
    """Map ``path`` read-only for the duration of the block. Nothing is opened for writing.

    ``sequential``: the caller walks the file front to back (dump, verify): the kernel reads ahead
    aggressively. (The walkers in kseg.format.log unmap what they have passed.)"""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            yield b""
            return
        mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)
    if sequential and hasattr(mm, "madvise"):
        mm.madvise(mmap.MADV_SEQUENTIAL)
    try:
        yield mm
    finally:
        try:
            mm.close()
        except BufferError:
            pass  # a caller still holds a view; the map closes when it is released


def map_file(path: str | Path) -> bytes | mmap.mmap:
    """A read-only map that closes when the last reference to it goes (for short-lived views)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        return b"" if size == 0 else mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)
