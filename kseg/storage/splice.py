"""A file spliced from another: some byte ranges of it kept, in order, with a few bytes edited in
place. How `kseg salvage` writes a damaged `.log` without its unreadable ranges (planning knows
the result's size and sha256 before anything is written; writing checks it)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

_CHUNK = 1 << 20


class SpliceMismatch(Exception):
    """The spliced bytes are not the ones planned (the source changed)."""


def _pieces(
    src: str | Path, keep: list[tuple[int, int]], edits: list[tuple[int, bytes]]
) -> Iterator[bytes]:
    """The bytes of ``src`` in each ``[start, end)`` of ``keep``, with each edit (position in
    ``src``, new bytes) applied where it lies in a kept range."""
    from kseg.storage.mapped import open_regular  # a FIFO or device is never opened

    with os.fdopen(open_regular(src), "rb") as f:
        for start, end in keep:
            f.seek(start)
            pos = start
            while pos < end:
                chunk = bytearray(f.read(min(end - pos, _CHUNK)))
                if not chunk:
                    raise SpliceMismatch(f"{src}: shorter than expected ({pos} bytes)")
                for at, new in edits:
                    lo, hi = max(at, pos), min(at + len(new), pos + len(chunk))
                    if lo < hi:
                        chunk[lo - pos : hi - pos] = new[lo - at : hi - at]
                yield bytes(chunk)
                pos += len(chunk)


def splice_digest(
    src: str | Path, keep: list[tuple[int, int]], edits: list[tuple[int, bytes]]
) -> tuple[int, str]:
    """(size, sha256) of what ``write_splice`` would write."""
    h, n = hashlib.sha256(), 0
    for piece in _pieces(src, keep, edits):
        h.update(piece)
        n += len(piece)
    return n, h.hexdigest()


def write_splice(
    src: str | Path,
    dest: str | Path,
    keep: list[tuple[int, int]],
    edits: list[tuple[int, bytes]],
    expect: tuple[int, str] | None = None,
) -> tuple[int, str]:
    """Write the splice of ``src`` to ``dest`` atomically (temp, fsync, rename; never through a
    symlink: the temp is created anew and renamed over it). With ``expect`` (size, sha256) the
    bytes must match, else SpliceMismatch and ``dest`` is left as it was."""
    from kseg.storage.atomic import _write_replace

    got: list = []

    def fill(f) -> None:
        h, n = hashlib.sha256(), 0
        for piece in _pieces(src, keep, edits):
            h.update(piece)
            f.write(piece)
            n += len(piece)
        got.append((n, h.hexdigest()))
        if expect is not None and got[0] != tuple(expect):
            raise SpliceMismatch(f"{src}: the salvaged bytes differ from the plan's sha256")

    _write_replace(Path(dest), fill)
    return got[0]
