"""Kafka 0.7 messages (`.kafka` segments): read as views, written by the same field lists.

Wire layout (big-endian), one field list per magic, positions derived from it (FORMATS.md s10,
Kafka 0.7.2's ``kafka.message.Message``):

    magic 0:  size N i32 | magic i8 |                 crc u32 | payload (N - 5 bytes)
    magic 1:  size N i32 | magic i8 | attributes i8 | crc u32 | payload (N - 6 bytes)

``size`` counts the bytes after it. The CRC is CRC-32 (zlib) of the PAYLOAD ONLY: magic and
attributes are not covered. There is no offset, key or timestamp: an entry's offset is its byte
position in the partition's stream. Codec = ``attributes & 0x03`` (0 none, 1 gzip, 2 snappy with
snappy-java's xerial framing; 3 is invalid). A compressed entry is a magic-1 wrapper whose payload
is the compressed bytes of an inner message set (``[size][message]...``, the same format); 0.7's
deep iterator decompresses recursively, so nesting is read here too, bounded in depth and in the
total bytes decompressed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from kseg.format import compression as codecs
from kseg.format.crc import crc32
from kseg.format.errors import (
    CRC_MISMATCH,
    INVALID_MAGIC,
    INVALID_RECORD,
    INVALID_SIZE,
    TORN_TAIL,
    UNKNOWN_CODEC,
    ZERO_FILLED_TAIL,
    CorruptionError,
    DecompressionError,
)
from kseg.format.log import is_zero

_FIELDS = {
    0: (
        ("size", "i"),  # bytes after this field
        ("magic", "b"),
        ("crc", "I"),  # CRC-32 of the payload only
    ),
    1: (
        ("size", "i"),
        ("magic", "b"),
        ("attributes", "b"),  # bits 0-1: codec
        ("crc", "I"),
    ),
}


def _positions(fields) -> dict[str, int]:
    out, p = {}, 0
    for name, code in fields:
        out[name] = p
        p += struct.calcsize(">" + code)
    out["payload"] = p
    return out


FIELD_POS = {m: _positions(f) for m, f in _FIELDS.items()}
HEADER = {m: struct.Struct(">" + "".join(c for _, c in f)) for m, f in _FIELDS.items()}
SIZE = struct.Struct(">i")
SIZE_LENGTH = SIZE.size  # 4: 0.7's "4 + size" per entry
MAGIC_POS = FIELD_POS[0]["magic"]  # 4, the same for both magics
CRC_POS = {m: FIELD_POS[m]["crc"] for m in _FIELDS}  # 5, 6
PAYLOAD_POS = {m: FIELD_POS[m]["payload"] for m in _FIELDS}  # 9, 10
# the smallest size field a magic can hold (an empty payload): 5 and 6. 0.7's recovery refuses
# anything below Message.MinHeaderSize, which is magic 0's 5.
MIN_SIZE = {m: PAYLOAD_POS[m] - SIZE_LENGTH for m in _FIELDS}
MIN_ENTRY_SIZE = MIN_SIZE[0]
assert FIELD_POS[1]["magic"] == MAGIC_POS and MIN_SIZE == {0: 5, 1: 6}

MAGICS = (0, 1)
CURRENT_MAGIC = 1  # every 0.7 client writes magic 1; magic 0 is the 0.6 era
ATTR_CODEC = 0x03
CODECS = {codecs.NONE: "none", codecs.GZIP: "gzip", codecs.SNAPPY: "snappy"}
# 0.7 decompresses recursively; real producers nest one level. Deeper is refused (bounded work).
MAX_DEPTH = 4
EXTENSION = ".kafka"


def codec_name(codec: int) -> str:
    return CODECS.get(codec, f"unknown({codec})")


def _ensure(buf, start: int, end: int) -> None:
    ensure = getattr(buf, "ensure", None)  # a buffer read on demand (storage.mapped)
    if ensure is not None:
        ensure(start, end)


class Message07:
    """One 0.7 entry read in place. ``position`` is its start in ``buf``; ``base`` is what turns
    that into the partition's byte offset (the segment's name; 0 for a decompressed set)."""

    __slots__ = ("buf", "position", "base", "source", "size", "magic", "attributes", "crc")

    def __init__(self, buf, position: int, *, base: int = 0, source: str | None = None) -> None:
        self.buf = buf
        self.position = position
        self.base = base
        self.source = source  # a label (the file) for error messages only
        (self.size,) = SIZE.unpack_from(buf, position)
        magic = buf[position + MAGIC_POS]
        self.magic = magic - 256 if magic > 127 else magic
        if self.magic == 1:
            _, _, self.attributes, self.crc = HEADER[1].unpack_from(buf, position)
        else:
            self.attributes = 0
            _, _, self.crc = HEADER[0].unpack_from(buf, position)

    # --- facts -------------------------------------------------------------------------------
    @property
    def entry_size(self) -> int:
        """Bytes the entry takes in the file: the size field and what it counts."""
        return SIZE_LENGTH + self.size

    @property
    def offset(self) -> int:
        """The entry's byte offset in the partition (its position; 0.7's name for it)."""
        return self.base + self.position

    @property
    def next_offset(self) -> int:
        """The next entry's offset: what a 0.7 consumer stores after reading this one."""
        return self.offset + self.entry_size

    @property
    def codec(self) -> int:
        return self.attributes & ATTR_CODEC

    @property
    def compression(self) -> str:
        return codec_name(self.codec)

    @property
    def is_compressed(self) -> bool:
        return self.codec != codecs.NONE

    @property
    def payload_start(self) -> int:
        return self.position + PAYLOAD_POS[self.magic]

    @property
    def payload_end(self) -> int:
        return self.position + self.entry_size

    @property
    def payload_size(self) -> int:
        return self.payload_end - self.payload_start

    def payload(self) -> memoryview:
        """A view of the payload (no copy); the caller releases it or lets it go."""
        return memoryview(self.buf)[self.payload_start : self.payload_end]

    # --- integrity -----------------------------------------------------------------------------
    def compute_crc(self) -> int:
        with memoryview(self.buf) as mv:
            return crc32(mv[self.payload_start : self.payload_end])

    @property
    def crc_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def error(self, message: str, kind: str = INVALID_RECORD, field: str | None = None, **kw):
        return CorruptionError(
            message,
            kind=kind,
            position=self.position,
            field=field,
            offset=self.offset,
            file=self.source,
            **kw,
        )

    def validate(self) -> None:
        """Raise the error 0.7's recovery stops at (CRC), or an unknown codec (0.7 throws)."""
        computed = self.compute_crc()
        if computed != self.crc:
            raise self.error(
                "message CRC-32 mismatch (payload)",
                CRC_MISMATCH,
                "crc",
                stored=self.crc,
                computed=computed,
            )
        if self.codec not in CODECS:
            raise self.error(
                f"unknown compression codec {self.codec} (attributes {self.attributes:#04x})",
                UNKNOWN_CODEC,
                "attributes",
            )

    def __repr__(self) -> str:
        return (
            f"Message07(offset={self.offset}, size={self.size}, magic={self.magic}, "
            f"compression={self.compression})"
        )


def check_header(buf, pos: int, end: int, *, base: int = 0, source: str | None = None) -> None:
    """Raise the structural error 0.7's recovery stops at for the entry at ``pos``, if any:
    fewer than 4 bytes left, a size below 5 (6 for magic 1), an entry running past ``end``, or a
    magic other than 0 and 1 (0.7 threw on it; kseg treats it as corruption)."""

    def error(message: str, kind: str, field: str | None) -> CorruptionError:
        return CorruptionError(
            message, kind=kind, position=pos, field=field, offset=base + pos, file=source
        )

    def tail(message: str, kind: str, field: str | None) -> CorruptionError:
        if is_zero(buf, pos, end):
            message = f"{end - pos} zero bytes from here to the end (zero-filled tail)"
            kind = ZERO_FILLED_TAIL
        return error(message, kind, field)

    remaining = end - pos
    if remaining < SIZE_LENGTH:
        raise tail(f"{remaining} trailing bytes, too few for a size field", TORN_TAIL, None)
    _ensure(buf, pos, pos + SIZE_LENGTH)
    (size,) = SIZE.unpack_from(buf, pos)
    if size < MIN_ENTRY_SIZE:
        raise tail(
            f"message size {size} is below the minimum {MIN_ENTRY_SIZE}", INVALID_SIZE, "size"
        )
    if size > remaining - SIZE_LENGTH:
        raise tail(
            f"message of {size + SIZE_LENGTH} bytes extends "
            f"{size + SIZE_LENGTH - remaining} bytes past the end",
            TORN_TAIL,
            "size",
        )
    _ensure(buf, pos, pos + SIZE_LENGTH + size)
    magic = buf[pos + MAGIC_POS]
    magic = magic - 256 if magic > 127 else magic
    if magic not in MAGICS:
        raise error(f"invalid magic {magic} (0.7 knows 0 and 1)", INVALID_MAGIC, "magic")
    if size < MIN_SIZE[magic]:
        raise error(
            f"message size {size} is below the minimum {MIN_SIZE[magic]} for magic {magic}",
            INVALID_SIZE,
            "size",
        )


def entries(
    buf,
    start: int = 0,
    end: int | None = None,
    *,
    base: int = 0,
    source: str | None = None,
    validate: bool = True,
) -> Iterator[Message07]:
    """The top-level entries of ``buf[start:end)`` in order, each checked as 0.7's recovery
    checks it (structure, and the CRC and codec when ``validate``); the first invalid one raises
    a :class:`CorruptionError` naming ``source``, its ``position`` in ``buf`` and its ``offset``
    (``base`` + position: the byte offset in the partition's stream)."""
    end = len(buf) if end is None else end
    pos = start
    while pos < end:
        check_header(buf, pos, end, base=base, source=source)
        msg = Message07(buf, pos, base=base, source=source)
        if validate:
            msg.validate()
        yield msg
        pos += msg.entry_size


# --- compressed wrappers -------------------------------------------------------------------------


class Inner(NamedTuple):
    """One message delivered by a 0.7 deep iteration of a wrapper (flattened across nesting)."""

    payload: bytes
    magic: int
    crc: int
    depth: int  # 1: directly inside the top-level wrapper
    position: int  # its position in the decompressed set that holds it
    consumer_offset: int  # what a 0.7 consumer stores for it (see inner_messages)


class _Budget:
    __slots__ = ("left",)

    def __init__(self, limit: int) -> None:
        self.left = limit


def inner_messages(
    wrapper: Message07,
    *,
    max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED,
    max_depth: int = MAX_DEPTH,
) -> list[Inner]:
    """The messages inside a compressed wrapper, in order, each CRC-checked; nested wrappers are
    decompressed too, up to ``max_depth`` levels, with at most ``max_decompressed`` bytes
    produced in all. A consumer of 0.7 sees the wrapper's offset for every inner message but the
    last, and the wrapper's end (the next entry's offset) for the last. Errors name the wrapper's
    byte offset, and the decompressed byte within it."""
    found: list[tuple] = []
    _decompress_into(wrapper, wrapper, 1, _Budget(max_decompressed), max_depth, found)
    out = []
    last = len(found) - 1
    for i, (payload, magic, crc, depth, position) in enumerate(found):
        consumer = wrapper.next_offset if i == last else wrapper.offset
        out.append(Inner(payload, magic, crc, depth, position, consumer))
    return out


def _decompress_into(
    top: Message07, msg: Message07, depth: int, budget: _Budget, max_depth: int, out: list
) -> None:
    if depth > max_depth:
        raise top.error(
            f"compressed messages nested more than {max_depth} levels deep", field="payload"
        )
    where = "payload" if msg is top else f"payload (nested at decompressed byte {msg.position})"
    with msg.payload() as payload:
        try:
            data = codecs.decompress(msg.codec, payload, budget.left)
        except DecompressionError as exc:
            raise top.error(
                exc.message,
                exc.kind,
                f"{where} ({msg.compression}, compressed byte {exc.position or 0})",
            ) from None
    budget.left -= len(data)
    n = len(data)
    pos = 0
    while pos < n:
        try:
            check_header(data, pos, n)
        except CorruptionError as exc:
            raise top.error(
                f"inner message at decompressed byte {pos}: {exc.message}",
                exc.kind,
                f"{where}.{exc.field or 'size'}",
            ) from None
        inner = Message07(data, pos)
        computed = inner.compute_crc()
        if computed != inner.crc:
            raise top.error(
                f"inner message CRC-32 mismatch at decompressed byte {pos} (depth {depth})",
                CRC_MISMATCH,
                f"{where}.crc",
                stored=inner.crc,
                computed=computed,
            )
        if inner.codec not in CODECS:
            raise top.error(
                f"inner message at decompressed byte {pos} has unknown codec {inner.codec}",
                UNKNOWN_CODEC,
                f"{where}.attributes",
            )
        if inner.is_compressed:
            _decompress_into(top, inner, depth + 1, budget, max_depth, out)
        else:
            out.append(
                (data[inner.payload_start : inner.payload_end], inner.magic, inner.crc, depth, pos)
            )
        pos += inner.entry_size


# --- writing ---------------------------------------------------------------------------------


def encode_message(payload, *, magic: int = CURRENT_MAGIC, codec: int = codecs.NONE) -> bytes:
    """One entry holding ``payload`` as it is (already compressed when ``codec`` says so)."""
    if magic not in MAGICS:
        raise ValueError("a 0.7 message has magic 0 or 1")
    if codec not in CODECS:
        raise ValueError(f"0.7 knows codecs {sorted(CODECS)}, not {codec}")
    if magic == 0 and codec != codecs.NONE:
        raise ValueError("magic 0 has no attributes byte, so it cannot be compressed")
    payload = bytes(payload)
    size = PAYLOAD_POS[magic] - SIZE_LENGTH + len(payload)
    crc = crc32(payload)
    head = HEADER[1].pack(size, 1, codec, crc) if magic == 1 else HEADER[0].pack(size, 0, crc)
    return head + payload


def encode_message_set(
    payloads: Iterable[bytes], *, magic: int = CURRENT_MAGIC, codec: int = codecs.NONE
) -> bytes:
    """What a 0.7 producer sends and the broker appends: one entry per payload, or (codec gzip
    or snappy) one magic-1 wrapper whose payload is the compressed set of magic-``magic``
    messages (CompressionUtils.compress)."""
    payloads = list(payloads)
    if codec == codecs.NONE:
        return b"".join(encode_message(p, magic=magic) for p in payloads)
    return encode_wrapper(b"".join(encode_message(p, magic=magic) for p in payloads), codec=codec)


def encode_wrapper(inner_set: bytes, *, codec: int) -> bytes:
    """A magic-1 wrapper around an already encoded message set (nesting, for tests)."""
    if codec == codecs.NONE:
        raise ValueError("a wrapper needs a codec")
    return encode_message(codecs.compress(codec, inner_set), magic=1, codec=codec)
