"""LZ4 frame format, as Kafka's KafkaLZ4BlockOutputStream writes it.

Parsed here rather than handed to a library so that
- the output size is bounded block by block (a lying frame cannot exhaust memory), and
- frames written by Kafka < 0.10 for magic 0, whose header checksum wrongly covers the magic
  number too (KAFKA-3160), are accepted.
"""

from __future__ import annotations

import struct

import cramjam

from kseg.format.errors import DECOMPRESSION_FAILED, DECOMPRESSION_LIMIT, DecompressionError
from kseg.format.scratch import scratch as get_scratch

MAGIC = 0x184D2204
_U32 = struct.Struct("<I")
_BLOCK_MAX = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
_UNCOMPRESSED_BIT = 0x80000000
_WRITE_BLOCK_SIZE = 64 << 10  # Kafka's default (BD = 4)

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32, used only for the 2-3 byte frame descriptor checksum."""
    n = len(data)
    i = 0
    if n >= 16:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed & _M, (seed - _P1) & _M
        while i + 16 <= n:
            a, b, c, d = struct.unpack_from("<4I", data, i)
            v1 = _rotl((v1 + a * _P2) & _M, 13) * _P1 & _M
            v2 = _rotl((v2 + b * _P2) & _M, 13) * _P1 & _M
            v3 = _rotl((v3 + c * _P2) & _M, 13) * _P1 & _M
            v4 = _rotl((v4 + d * _P2) & _M, 13) * _P1 & _M
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 4 <= n:
        h = _rotl((h + _U32.unpack_from(data, i)[0] * _P3) & _M, 17) * _P4 & _M
        i += 4
    while i < n:
        h = _rotl((h + data[i] * _P5) & _M, 11) * _P1 & _M
        i += 1
    h ^= h >> 15
    h = h * _P2 & _M
    h ^= h >> 13
    h = h * _P3 & _M
    h ^= h >> 16
    return h


def compress(data, *, broken_header_checksum: bool = False) -> bytes:
    """One frame: independent 64 KiB blocks, no block or content checksum (as Kafka writes)."""
    flg, bd = 0x60, 0x40  # version 01, block independence; block max 64 KiB
    head = bytearray(_U32.pack(MAGIC))
    head += bytes((flg, bd))
    covered = bytes(head) if broken_header_checksum else bytes(head[4:])
    head.append((xxh32(covered) >> 8) & 0xFF)
    out = head
    view = memoryview(data)
    for start in range(0, len(view), _WRITE_BLOCK_SIZE):
        chunk = view[start : start + _WRITE_BLOCK_SIZE]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):
            out += _U32.pack(len(chunk) | _UNCOMPRESSED_BIT)
            out += chunk
        else:
            out += _U32.pack(len(block))
            out += block
    out += _U32.pack(0)  # end mark
    return bytes(out)


def decompress(data, limit: int) -> bytes:
    """Decompress every frame in ``data``; at most ``limit`` output bytes."""
    view = memoryview(data)
    n = len(view)
    pos = 0
    out = bytearray()
    try:
        while pos < n:
            pos = _read_frame(view, pos, out, limit)
        return bytes(out)
    finally:
        out.clear()  # on an error too: a traceback kept by a caller must not pin the output


def _read_frame(view: memoryview, pos: int, out: bytearray, limit: int) -> int:
    n = len(view)
    start = pos
    if n - pos < 7 or _U32.unpack_from(view, pos)[0] != MAGIC:
        raise DecompressionError("not an LZ4 frame (bad magic number)", position=pos)
    flg, bd = view[pos + 4], view[pos + 5]
    if flg >> 6 != 1:
        raise DecompressionError(f"unsupported LZ4 frame version {flg >> 6}", position=pos)
    block_checksum = bool(flg & 0x10)
    content_size = bool(flg & 0x08)
    content_checksum = bool(flg & 0x04)
    if flg & 0x01:
        raise DecompressionError("LZ4 frames with a dictionary id are not supported", position=pos)
    block_max = _BLOCK_MAX.get((bd >> 4) & 7)
    if block_max is None:
        raise DecompressionError(f"invalid LZ4 block max size code {(bd >> 4) & 7}", position=pos)
    desc_end = pos + 6 + (8 if content_size else 0)
    if desc_end >= n:
        raise DecompressionError("truncated LZ4 frame header", position=pos)
    hc = view[desc_end]
    if hc not in (
        (xxh32(bytes(view[pos + 4 : desc_end])) >> 8) & 0xFF,
        (xxh32(bytes(view[pos:desc_end])) >> 8) & 0xFF,  # KAFKA-3160
    ):
        raise DecompressionError("LZ4 frame header checksum mismatch", position=start)
    pos = desc_end + 1
    scratch = memoryview(get_scratch(block_max))[:block_max]
    while True:
        if pos + 4 > n:
            raise DecompressionError("truncated LZ4 frame (no end mark)", position=pos)
        word = _U32.unpack_from(view, pos)[0]
        pos += 4
        if word == 0:
            break
        size = word & ~_UNCOMPRESSED_BIT
        if size > block_max or pos + size > n:
            raise DecompressionError(
                f"LZ4 block of {size} bytes exceeds the frame or its block size", position=pos - 4
            )
        block = view[pos : pos + size]
        pos += size + (4 if block_checksum else 0)
        if word & _UNCOMPRESSED_BIT:
            produced = size
            piece = block
        else:
            try:
                produced = cramjam.lz4.decompress_block_into(block, scratch)
            except MemoryError:
                raise
            except Exception as exc:  # cramjam raises its own error types
                raise DecompressionError(f"invalid LZ4 block: {exc}", position=pos) from None
            piece = scratch[:produced]
        if len(out) + produced > limit:
            raise DecompressionError(
                f"decompressed size exceeds the limit of {limit} bytes",
                kind=DECOMPRESSION_LIMIT,
                position=start,
            )
        out += piece
    if content_checksum:
        pos += 4
    if pos > n:
        raise DecompressionError(
            "truncated LZ4 frame checksum", kind=DECOMPRESSION_FAILED, position=pos
        )
    return pos
