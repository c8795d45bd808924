"""One reusable output buffer per thread for the codecs (lz4 blocks, zstd frames).

Allocating (and zero-filling) a fresh buffer per batch makes the allocator trim and refault the
heap, so small buffers are kept and reused. A buffer larger than KEEP_BYTES (a rare, large or
lying batch) is handed out fresh and never kept: one big batch must not pin hundreds of MiB for
the rest of the run, nor each failing batch add its own.
"""

from __future__ import annotations

import threading

KEEP_BYTES = 4 << 20  # the largest buffer kept between batches
_MIN_BYTES = 256 << 10

_local = threading.local()


def scratch(size: int) -> bytearray:
    """A buffer of at least ``size`` bytes: the per-thread reused one when ``size`` is at most
    KEEP_BYTES, otherwise a new one the caller drops when done."""
    if size > KEEP_BYTES:
        return bytearray(size)
    buf = getattr(_local, "buf", None)
    if buf is None or len(buf) < size:
        buf = bytearray(max(size, _MIN_BYTES))
        _local.buf = buf
    return buf


def kept_bytes() -> int:
    """Size of this thread's kept buffer (for tests: it never exceeds KEEP_BYTES)."""
    buf = getattr(_local, "buf", None)
    return 0 if buf is None else len(buf)
