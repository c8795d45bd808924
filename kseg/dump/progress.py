"""How far a dump has read, for a progress bar: the bytes it will read at most (a listing), and
its chunks passed through with the bar moved by the positions they come from."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kseg.dump.kernel_runs import RunChunk


def total_bytes(paths: list[Path]) -> int:
    """The bytes a dump of ``paths`` reads at most (for a progress bar): a listing, no reads."""
    import os

    total = 0
    for path in paths:
        try:
            if not path.is_dir():
                total += path.stat().st_size
                continue
            for top, _dirs, names in os.walk(path):
                for n in names:
                    try:
                        total += os.stat(os.path.join(top, n), follow_symlinks=False).st_size
                    except OSError:
                        pass
        except OSError:
            continue
    return total


def dump_progress(chunks: Iterator[list], bar) -> Iterator[list]:
    """Pass chunks through, moving ``bar`` (kseg.render.progress.Bar) by bytes: at each file, and within
    a file from a batch's position at most ten times a second (never per record)."""
    if not bar.enabled:
        yield from chunks
        return
    done = size = 0
    for chunk in chunks:
        if chunk:
            first = chunk[0]
            if type(first) is dict:
                if first["type"] == "file":
                    done += size
                    size = first.get("size") or 0
                    bar.update(completed=done)
                elif "position" in first and first["type"] == "batch" and bar.due():
                    bar.update(completed=done + first["position"])
            elif type(chunk) is RunChunk and bar.due():
                bar.update(completed=done + chunk.position)
        yield chunk
    bar.update(completed=done + size)
