"""One reusable output buffer per thread for the codecs (lz4 blocks, zstd frames).

Allocating (and zero-filling) a fresh buffer per batch makes the allocator trim and refault the
heap, so small buffers are kept and reused. A buffer larger than KEEP_BYTES (a rare, large or
lying batch) is handed out fresh and never kept: one big batch must not pin hundreds of MiB for
the rest of the run, nor each failing batch add its own.
"""

from __future__ import annotations

import mmap
import threading

KEEP_BYTES = 4 << 20  # the largest buffer kept between batches
_MIN_BYTES = 256 << 10

_local = threading.local()


def scratch(size: int) -> bytearray | mmap.mmap:
    """A buffer of at least ``size`` bytes: the per-thread reused one when ``size`` is at most
    KEEP_BYTES, otherwise a new anonymous map the caller drops when done (its pages take
    memory only once written: a codec's output buffer grown 4x past what it writes costs
    what it writes)."""
    if size > KEEP_BYTES:
        try:
            return mmap.mmap(-1, size)
        except OSError as exc:  # ENOMEM: out of memory, as a bytearray would say it
            raise MemoryError(f"cannot map {size} bytes: {exc.strerror}") from None
    buf = getattr(_local, "buf", None)
    if buf is None or len(buf) < size:
        buf = bytearray(max(size, _MIN_BYTES))
        _local.buf = buf
    return buf


def kept_bytes() -> int:
    """Size of this thread's kept buffer (for tests: it never exceeds KEEP_BYTES)."""
    buf = getattr(_local, "buf", None)
    return 0 if buf is None else len(buf)
