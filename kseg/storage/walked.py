"""How far the walks have read each segment, for whoever watches (the CLI's progress bar).

A segment's walk (Segment.walk_blocks / walk_headers) reports, between blocks of rows (the
kernel hands them over per window of at most 64 MiB or 4096 batches; the core's walk every 1024
entries), the byte position it has read up to in that `.log`. Nothing is reported unless a
watcher is set, and then once per block, never per batch: the hot loop does not change. The
library never prints; a watcher is the progress bar's (kseg.render.progress.Bar.walked).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

# watcher(log path, bytes of it read so far); None: nobody watches
_watcher: Callable[[str, int], None] | None = None
_EVERY_ROWS = 1024  # the core's walk: one report per this many entries


def watch(fn: Callable[[str, int], None] | None) -> Callable[[str, int], None] | None:
    """Set the watcher (None: stop); returns the previous one."""
    global _watcher
    previous, _watcher = _watcher, fn
    return previous


def watching() -> bool:
    return _watcher is not None


def blocks(walk: Iterator[bytes], log: str, row_size: int) -> Iterator[bytes]:
    """``walk``'s blocks of packed rows (kernel_walk.ROW: position, size first), reporting the
    end of each block's last entry after the block is handed on."""
    from kseg.storage.kernel_walk import ROW

    for block in walk:
        yield block
        w = _watcher
        if w is not None and block:
            pos, size = ROW.unpack_from(block, len(block) - row_size)[:2]
            w(log, pos + size)


def rows(walk: Iterator[tuple], log: str) -> Iterator[tuple]:
    """``walk``'s header tuples (position, size first), reporting every ``_EVERY_ROWS``."""
    n = 0
    for row in walk:
        yield row
        n += 1
        if n == _EVERY_ROWS:
            n = 0
            w = _watcher
            if w is not None:
                w(log, row[0] + row[1])
