"""Snappy as Kafka stores it: snappy-java's "xerial" stream framing, or one raw snappy block."""

from __future__ import annotations

import struct

import cramjam

from kseg.format.errors import DECOMPRESSION_LIMIT, DecompressionError
from kseg.format.scratch import scratch

MAGIC = b"\x82SNAPPY\x00"
_HEADER = struct.Struct(">8sii")  # magic, version, compatible version
_BLOCK_LEN = struct.Struct(">i")
VERSION = 1
COMPATIBLE_VERSION = 1
BLOCK_SIZE = 32 << 10  # snappy-java's default block size, used by Kafka's producer


def compress(data, *, xerial: bool = True) -> bytes:
    if not xerial:
        return bytes(cramjam.snappy.compress_raw(data))
    out = bytearray(_HEADER.pack(MAGIC, VERSION, COMPATIBLE_VERSION))
    view = memoryview(data)
    for start in range(0, len(view), BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + BLOCK_SIZE]))
        out += _BLOCK_LEN.pack(len(block))
        out += block
    return bytes(out)


def decompress(data, limit: int) -> bytes:
    view = memoryview(data)
    if len(view) >= _HEADER.size and view[:8] == MAGIC:
        out = bytearray()
        try:
            return _blocks(view, out, limit)
        finally:
            out.clear()  # on an error too: a traceback kept by a caller must not pin the output
    return _raw(view, limit, 0)


def _blocks(view: memoryview, out: bytearray, limit: int) -> bytes:
    pos = _HEADER.size
    while pos < len(view):
        if pos + 4 > len(view):
            raise DecompressionError("truncated xerial snappy block length", position=pos)
        (size,) = _BLOCK_LEN.unpack_from(view, pos)
        pos += 4
        if size < 0 or pos + size > len(view):
            raise DecompressionError(
                f"xerial snappy block of {size} bytes exceeds the payload", position=pos - 4
            )
        out += _raw(view[pos : pos + size], limit - len(out), pos)
        pos += size
    return bytes(out)


def _raw(block, limit: int, pos: int) -> bytes:
    try:
        claimed = cramjam.snappy.decompress_raw_len(block)
    except Exception as exc:
        raise DecompressionError(f"invalid snappy block: {exc}", position=pos) from None
    if claimed > limit:
        raise DecompressionError(
            f"snappy block claims {claimed} bytes, over the decompression limit",
            kind=DECOMPRESSION_LIMIT,
            position=pos,
        )
    # into a buffer of our own: running out of memory stays a MemoryError, never a false
    # "invalid snappy block"
    out = scratch(claimed)
    view = memoryview(out)[:claimed]
    try:
        n = cramjam.snappy.decompress_raw_into(block, view)
        return bytes(view[:n])
    except MemoryError:
        raise
    except Exception as exc:
        raise DecompressionError(f"invalid snappy block: {exc}", position=pos) from None
    finally:
        view.release()
