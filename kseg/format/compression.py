"""Codec ids, names and bounded compress/decompress for every codec Kafka writes."""

from __future__ import annotations

import zlib

from kseg.format.errors import (
    DECOMPRESSION_FAILED,
    DECOMPRESSION_LIMIT,
    UNKNOWN_CODEC,
    DecompressionError,
)
from kseg.format.scratch import scratch

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODEC_IDS = {name: cid for cid, name in CODEC_NAMES.items()}
CODEC_MASK = 0x07

# Kafka's own default max.message.bytes is ~1 MiB; batches far larger than 256 MiB
# decompressed are not something a broker accepts, so larger means a lie in the input.
DEFAULT_MAX_DECOMPRESSED = 256 << 20
_GZIP_PIECE = 4 << 20
# how zstd (through cramjam) says it could not allocate its context or window
_OUT_OF_MEMORY = "Allocation error"
ZSTD_LEVEL = 3  # zstd's default, and Kafka's


def codec_name(cid: int) -> str:
    return CODEC_NAMES.get(cid, f"unknown({cid})")


def codec_id(name: str | int) -> int:
    if isinstance(name, int):
        if name not in CODEC_NAMES:
            raise ValueError(f"unknown compression codec id {name}")
        return name
    try:
        return CODEC_IDS[name.lower()]
    except KeyError:
        raise ValueError(
            f"unknown compression {name!r}; expected one of {', '.join(CODEC_IDS)}"
        ) from None


def compress(cid: int, data, *, magic: int = 2, xerial_snappy: bool = True) -> bytes:
    """Compress ``data`` deterministically (gzip carries no mtime)."""
    if cid == GZIP:
        c = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: gzip wrapper, mtime 0
        return c.compress(data) + c.flush()
    if cid == SNAPPY:
        from kseg.format import xerial

        return xerial.compress(data, xerial=xerial_snappy)
    if cid == LZ4:
        from kseg.format import lz4frame

        # Kafka < 0.10 wrote magic 0 LZ4 with the KAFKA-3160 header checksum; mirror it.
        return lz4frame.compress(data, broken_header_checksum=(magic == 0))
    if cid == ZSTD:
        import cramjam

        return bytes(cramjam.zstd.compress(data, level=ZSTD_LEVEL))
    if cid == NONE:
        return bytes(data)
    raise ValueError(f"unknown compression codec id {cid}")


def decompress(cid: int, data, limit: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """Decompress ``data``; never produce more than ``limit`` bytes.

    Raises :class:`DecompressionError` (positions relative to ``data``) on any failure.
    """
    if cid == GZIP:
        return _gzip(data, limit)
    if cid == SNAPPY:
        from kseg.format import xerial

        return xerial.decompress(data, limit)
    if cid == LZ4:
        from kseg.format import lz4frame

        return lz4frame.decompress(data, limit)
    if cid == ZSTD:
        return _zstd(data, limit)
    if cid == NONE:
        return bytes(data)
    raise DecompressionError(f"unknown compression codec id {cid}", kind=UNKNOWN_CODEC)


def decompress_head(cid: int, data, n: int, limit: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """The first ``min(n, total)`` bytes of ``data`` decompressed (``n`` at most ``limit``).

    gzip (by far the commonest legacy codec) stops inflating after ``n`` bytes, so a probe of a
    message set's first entry costs microseconds; the other codecs decompress whole (bounded by
    ``limit``) and are cut. Raises :class:`DecompressionError` on data that fails before that.
    """
    if cid != GZIP:
        return decompress(cid, data, limit)[:n]
    out = bytearray()
    view = memoryview(data)
    while len(out) < n:
        d = zlib.decompressobj(47)
        try:
            out += d.decompress(view, n - len(out))
        except zlib.error as exc:
            raise DecompressionError(f"invalid gzip data: {exc}") from None
        if len(out) >= n:
            break
        if not d.eof:
            raise DecompressionError("truncated gzip data", kind=DECOMPRESSION_FAILED)
        rest = d.unused_data
        if not rest.strip(b"\x00"):  # as _gzip: concatenated members, trailing zeros
            break
        view = memoryview(rest)
    return bytes(out[:n])


def _gzip(data, limit: int) -> bytes:
    out = bytearray()
    try:
        return _gzip_into(out, data, limit)
    finally:
        out.clear()  # on an error too: a traceback kept by a caller must not pin the output


def _gzip_into(out: bytearray, data, limit: int) -> bytes:
    view = memoryview(data)
    while True:
        d = zlib.decompressobj(47)  # gzip or zlib header, auto-detected
        pending = view
        while True:  # in pieces: a piece is a temporary copy, the whole output is not
            room = min(_GZIP_PIECE, limit + 1 - len(out))
            try:
                piece = d.decompress(pending, room)
            except zlib.error as exc:
                if "Error -4 " in str(exc):  # Z_MEM_ERROR: out of memory, not bad data
                    raise MemoryError(f"zlib: {exc}") from None
                raise DecompressionError(f"invalid gzip data: {exc}") from None
            out += piece
            if len(out) > limit:
                raise DecompressionError(
                    f"decompressed size exceeds the limit of {limit} bytes",
                    kind=DECOMPRESSION_LIMIT,
                )
            pending = d.unconsumed_tail
            if d.eof or (not pending and len(piece) < room):
                break
        if not d.eof:
            raise DecompressionError("truncated gzip data", kind=DECOMPRESSION_FAILED)
        rest = d.unused_data
        if not rest.strip(b"\x00"):  # concatenated members are legal; trailing zeros tolerated
            return bytes(out)
        view = memoryview(rest)


def _zstd(data, limit: int) -> bytes:
    # The output size is unknown (Kafka streams zstd, so frames carry no content size): try a
    # reused buffer, then grow geometrically up to the limit; cramjam refuses to write past its
    # end. Buffers above scratch.KEEP_BYTES are fresh and dropped after the batch.
    import cramjam

    size = min(limit, max(256 << 10, 8 * len(data)))
    while True:
        buf = scratch(size)
        view = memoryview(buf)[:size]
        try:
            n = cramjam.zstd.decompress_into(data, view)
            return bytes(view[:n])
        except MemoryError:
            raise
        except Exception as exc:
            if _OUT_OF_MEMORY in str(exc):  # zstd's own context: no input fault
                raise MemoryError(f"zstd: {exc}") from None
            if "whole buffer" not in str(exc):
                raise DecompressionError(f"invalid zstd data: {exc}") from None
            if size >= limit:
                raise DecompressionError(
                    f"decompressed size exceeds the limit of {limit} bytes",
                    kind=DECOMPRESSION_LIMIT,
                ) from None
            size = min(limit, size * 4)
        finally:
            view.release()
            del buf
