"""The two checksums of the log: CRC-32C for v2 batches and producer snapshots, CRC-32 for legacy."""

from __future__ import annotations

import zlib

from crc32c import crc32c as _crc32c


def crc32c(data) -> int:
    """CRC-32C (Castagnoli) of a bytes-like object; memoryview slices are not copied."""
    return _crc32c(data)


def crc32(data) -> int:
    """CRC-32 (zlib/IEEE) as legacy messages use it."""
    return zlib.crc32(data) & 0xFFFFFFFF
