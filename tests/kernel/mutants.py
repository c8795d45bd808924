"""Structure-aware mutants of a segment, for the fuzz target's custom mutator and a deterministic
differential test (issue 35): a batch's record count, a record's length, header count or a
header's key/value length rewritten to huge, negative or off-by-one values, the varints re-encoded
(the record's length and the batch's size follow, or not), a compressed batch's records
recompressed with its codec, and every CRC recomputed so the lie gets past the CRC check to the
record decoders of both paths.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from typing import NamedTuple

from kseg.format import compression as codecs
from kseg.format.batch import CRC_COVERAGE_START, CRC_POS, HEADER_SIZE
from kseg.format.crc import crc32c
from kseg.format.errors import CorruptionError
from kseg.format.varint import read_varint, write_varint

COUNT_POS = 57  # records_count: i32 (kseg.format.batch._FIELDS)
LENGTH_POS = 8  # batch_length: i32
I32 = struct.Struct(">i")


class Batch(NamedTuple):
    position: int
    size: int
    codec: int
    records: bytes  # decompressed when the batch is compressed


class Field(NamedTuple):
    """A varint of the records: where it starts and ends in them, its value, and whether it is
    the record's length (the rest of the record follows it) or inside a record at ``record``."""

    kind: str  # "length", "hcount", "hkey", "hvalue"
    start: int
    end: int
    value: int
    record: int  # the start of its record's length varint


def batches(buf: bytes) -> list[Batch]:
    """The v2 batches framed from the start (stops at anything else); compressed ones whose
    payload decompresses, with their records."""
    out, pos = [], 0
    while pos + HEADER_SIZE <= len(buf) and buf[pos + 16] == 2:
        size = I32.unpack_from(buf, pos + LENGTH_POS)[0] + 12
        if size < HEADER_SIZE or pos + size > len(buf):
            break
        codec = struct.unpack_from(">h", buf, pos + 21)[0] & 7
        payload = buf[pos + HEADER_SIZE : pos + size]
        try:
            records = payload if codec == 0 else codecs.decompress(codec, payload, 1 << 20)
        except (CorruptionError, ValueError):
            records = None
        if records is not None:
            out.append(Batch(pos, size, codec, bytes(records)))
        pos += size
    return out


def fields(records: bytes, count: int, most: int = 64) -> list[Field]:
    """The length, header count and header key/value length varints of the first records (as
    far as they parse), at most ``most``."""
    out: list[Field] = []
    pos = 0
    try:
        for _ in range(max(0, min(count, 1000))):
            start = pos
            length, pos = read_varint(records, pos)
            out.append(Field("length", start, pos, length, start))
            end = pos + length
            pos += 1
            for _ in range(2):  # timestamp and offset deltas
                _, pos = read_varint(records, pos)
            for _ in range(2):  # key, value
                n, pos = read_varint(records, pos)
                pos += max(n, 0)
            h0 = pos
            hcount, pos = read_varint(records, pos)
            out.append(Field("hcount", h0, pos, hcount, start))
            for _ in range(max(0, min(hcount, 8))):
                for kind in ("hkey", "hvalue"):
                    f0 = pos
                    n, pos = read_varint(records, pos)
                    out.append(Field(kind, f0, pos, n, start))
                    pos += max(n, 0)
            pos = end
            if len(out) >= most or pos >= len(records):
                break
    except (CorruptionError, IndexError):
        pass
    return out[:most]


def values(value: int, room: int) -> list[int]:
    """What a count or length is rewritten to: off by one, zero, negative, as many as the bytes
    could hold (and one more), and the int32/int64 limits."""
    return sorted(
        {
            value - 1,
            value + 1,
            0,
            -1,
            -2,
            room,
            room + 1,
            2**31 - 1,
            -(2**31),
            2**62,
            2**63 - 1,
            -(2**63),
        }
        - {value}
    )


def rebuild(buf: bytes, batch: Batch, records: bytes, count: int | None = None) -> bytes:
    """``buf`` with ``batch``'s records replaced (recompressed with its codec), its size and
    (when given) its record count rewritten, and every CRC recomputed."""
    payload = records if batch.codec == 0 else codecs.compress(batch.codec, records)
    head = bytearray(buf[batch.position : batch.position + HEADER_SIZE])
    I32.pack_into(head, LENGTH_POS, HEADER_SIZE - 12 + len(payload))
    if count is not None:
        I32.pack_into(head, COUNT_POS, count)
    one = head + payload
    struct.pack_into(">I", one, CRC_POS, crc32c(bytes(one[CRC_COVERAGE_START:])))
    out = bytearray(buf[: batch.position]) + one + buf[batch.position + batch.size :]
    fix_crcs(out)
    return bytes(out)


def fix_crcs(buf: bytearray) -> None:
    """Recompute the CRC of every v2 batch the sizes still frame."""
    pos = 0
    while pos + HEADER_SIZE <= len(buf) and buf[pos + 16] == 2:
        size = I32.unpack_from(buf, pos + LENGTH_POS)[0] + 12
        if size < HEADER_SIZE or pos + size > len(buf):
            return
        crc = crc32c(bytes(buf[pos + CRC_COVERAGE_START : pos + size]))
        struct.pack_into(">I", buf, pos + CRC_POS, crc)
        pos += size


def varint(value: int) -> bytes:
    out = bytearray()
    write_varint(out, value)
    return bytes(out)


def rewrite(records: bytes, field: Field, value: int, follow: bool) -> bytes:
    """``records`` with ``field``'s varint re-encoded as ``value``; with ``follow``, the length of
    the record it is in grows or shrinks by the bytes the varint did (its own varint re-encoded)."""
    new = varint(value)
    out = records[: field.start] + new + records[field.end :]
    if not follow or field.kind == "length":
        return out
    delta = len(new) - (field.end - field.start)
    length, after = read_varint(out, field.record)
    return out[: field.record] + varint(length + delta) + out[after:]


def mutants(buf: bytes) -> Iterator[tuple[str, bytes]]:
    """Every mutant of ``buf``'s first two batches: (what changed, the segment)."""
    for b in batches(buf)[:2]:
        count = I32.unpack_from(buf, b.position + COUNT_POS)[0]
        for v in values(count, len(b.records) // 7):
            if -(2**31) <= v < 2**31:
                yield f"batch@{b.position} count {count}->{v}", rebuild(buf, b, b.records, v)
        for f in fields(b.records, count, most=12):
            room = len(b.records) - f.end
            for v in values(f.value, room // 2 if f.kind == "hcount" else room):
                for follow in (True, False):
                    what = f"batch@{b.position} {f.kind}@{f.start} {f.value}->{v} follow={follow}"
                    yield what, rebuild(buf, b, rewrite(b.records, f, v, follow))


def mutate(buf: bytes, rng: random.Random) -> bytes:
    """One mutant of ``buf`` chosen by ``rng`` (``buf`` itself when it frames no batch)."""
    found = batches(buf)
    if not found:
        return buf
    b = rng.choice(found)
    count = I32.unpack_from(buf, b.position + COUNT_POS)[0]
    fs = fields(b.records, count)
    if not fs or rng.random() < 0.25:
        v = rng.choice(values(count, len(b.records) // 7))
        return rebuild(buf, b, b.records, max(-(2**31), min(v, 2**31 - 1)))
    f = rng.choice(fs)
    room = len(b.records) - f.end
    v = rng.choice(values(f.value, room // 2 if f.kind == "hcount" else room))
    return rebuild(buf, b, rewrite(b.records, f, v, rng.random() < 0.7))
