"""Legacy messages, magic 0 and 1, including compressed wrapper messages.

    offset i64 | size i32 | crc u32 | magic i8 | attributes i8 | [timestamp i64, magic 1 only] |
    keyLength i32 | key | valueLength i32 | value

CRC-32 (zlib) covers magic..end. A compressed message is a wrapper whose value is a compressed
message set; its offset is the LAST inner offset. Inner offsets are absolute for magic 0 and
relative for magic 1 (absolute = wrapper offset - last inner relative offset + relative).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence

from . import compression as codecs
from .crc import crc32
from .errors import CRC_MISMATCH, INVALID_RECORD, INVALID_SIZE, CorruptionError, DecompressionError
from .record import CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP, NO_TIMESTAMP_TYPE, Record

PREFIX = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
TIMESTAMP = struct.Struct(">q")
LENGTH = struct.Struct(">i")
LOG_OVERHEAD = 12  # offset + size
CRC_POS = 12
MAGIC_POS = 16
# size field minimum: crc 4 + magic 1 + attributes 1 + key length 4 + value length 4 (+ ts 8)
RECORD_OVERHEAD = {0: 14, 1: 22}
ATTR_COMPRESSION = 0x07
ATTR_TIMESTAMP_TYPE = 0x08


class LegacyEntry:
    """A top-level (or inner) legacy message, read in place."""

    __slots__ = (
        "buf",
        "position",
        "source",
        "offset",
        "message_size",
        "crc",
        "magic",
        "attributes",
        "timestamp",
    )

    def __init__(self, buf, position: int, source: str | None = None) -> None:
        self.buf = buf
        self.position = position
        self.source = source  # a label (the file) for error messages only
        self.offset, self.message_size, self.crc, self.magic, self.attributes = PREFIX.unpack_from(
            buf, position
        )
        if self.magic >= 1 and self.message_size >= RECORD_OVERHEAD[1]:
            (self.timestamp,) = TIMESTAMP.unpack_from(buf, position + PREFIX.size)
        else:
            self.timestamp = NO_TIMESTAMP

    # Uniform names with RecordBatch, so callers can treat both alike.
    @property
    def size(self) -> int:
        return self.message_size + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def max_timestamp(self) -> int:
        return self.timestamp

    @property
    def compression_id(self) -> int:
        return self.attributes & ATTR_COMPRESSION

    @property
    def compression(self) -> str:
        return codecs.codec_name(self.attributes & ATTR_COMPRESSION)

    @property
    def is_compressed(self) -> bool:
        return bool(self.attributes & ATTR_COMPRESSION)

    @property
    def timestamp_type(self) -> str:
        if self.magic == 0:
            return NO_TIMESTAMP_TYPE
        return LOG_APPEND_TIME if self.attributes & ATTR_TIMESTAMP_TYPE else CREATE_TIME

    is_control = False
    is_transactional = False
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    partition_leader_epoch = -1

    def compute_crc(self) -> int:
        with memoryview(self.buf) as mv:
            return crc32(mv[self.position + MAGIC_POS : self.position + self.size])

    @property
    def crc_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def validate(self) -> None:
        """Raise unless size, CRC and key/value lengths are consistent (what Kafka accepts)."""
        minimum = RECORD_OVERHEAD.get(self.magic, 14)
        if self.message_size < minimum:
            raise self._error(
                f"message size {self.message_size} is below the minimum {minimum} for magic {self.magic}",
                INVALID_SIZE,
                "size",
            )
        computed = self.compute_crc()
        if computed != self.crc:
            raise CorruptionError(
                "message CRC-32 mismatch",
                kind=CRC_MISMATCH,
                position=self.position,
                field="crc",
                stored=self.crc,
                computed=computed,
                offset=self.offset,
            )
        self.key_value()

    def _error(
        self, message: str, kind: str = INVALID_RECORD, field: str | None = None
    ) -> CorruptionError:
        return CorruptionError(
            message, kind=kind, position=self.position, field=field, offset=self.offset
        )

    def key_value(self) -> tuple[bytes | None, bytes | None]:
        """The key and value, with every length checked against the message size."""
        end = self.position + self.size
        pos = self.position + PREFIX.size + (8 if self.magic >= 1 else 0)
        parts = []
        for name in ("key", "value"):
            if pos + 4 > end:
                raise self._error(f"{name} length field past the end of the message", field=name)
            (n,) = LENGTH.unpack_from(self.buf, pos)
            pos += 4
            if n == -1:
                parts.append(None)
                continue
            if n < 0 or pos + n > end:
                raise self._error(
                    f"{name} length {n} does not fit the message", field=f"{name}_length"
                )
            parts.append(self.buf[pos : pos + n])
            pos += n
        if pos != end:
            raise self._error(f"{end - pos} bytes after the value", field="size")
        return parts[0], parts[1]

    def inner_entries(
        self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED
    ) -> list[LegacyEntry]:
        """The messages inside a compressed wrapper (validated), in stored order."""
        _, value = self.key_value()
        if value is None:
            raise self._error("compressed wrapper message has a null value", field="value")
        try:
            data = codecs.decompress(self.compression_id, value, max_decompressed)
        except DecompressionError as exc:
            exc.field = f"value ({self.compression}, payload byte {exc.position or 0})"
            exc.position, exc.offset = self.position, self.offset
            raise exc.in_file(self.source) if self.source else exc from None
        inner = []
        pos = 0
        while pos < len(data):
            if len(data) - pos < MAGIC_POS + 1:
                raise self._error(
                    f"truncated inner message at decompressed byte {pos}", field="value"
                )
            entry = LegacyEntry(data, pos)
            if entry.message_size < RECORD_OVERHEAD.get(entry.magic, 14) or pos + entry.size > len(
                data
            ):
                raise self._error(
                    f"inner message at decompressed byte {pos} has invalid size {entry.message_size}",
                    field="value",
                )
            if entry.magic != self.magic:
                raise self._error(
                    f"inner message magic {entry.magic} differs from wrapper magic {self.magic}",
                    field="value",
                )
            if entry.is_compressed:
                raise self._error(
                    "compressed inner message inside a compressed wrapper", field="value"
                )
            computed = entry.compute_crc()
            if computed != entry.crc:
                raise CorruptionError(
                    f"inner message CRC-32 mismatch at decompressed byte {pos}",
                    kind=CRC_MISMATCH,
                    position=self.position,
                    field="value.crc",
                    stored=entry.crc,
                    computed=computed,
                    offset=self.offset,
                    file=self.source,
                )
            inner.append(entry)
            pos += entry.size
        if not inner:
            raise self._error("compressed wrapper message holds no messages", field="value")
        return inner

    def record_tuples(
        self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED
    ) -> Iterator[tuple]:
        """Records as tuples in Record's field order (see RecordBatch.record_tuples)."""
        for r in self.records(max_decompressed):
            yield (r.key, r.value, r.timestamp, r.headers, r.offset, r.sequence, r.timestamp_type)

    def records(self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED) -> Iterator[Record]:
        ts_type = self.timestamp_type
        if not self.is_compressed:
            key, value = self.key_value()
            yield Record(key, value, self.timestamp, [], self.offset, -1, ts_type)
            return
        inner = self.inner_entries(max_decompressed)
        shift = self._shift(inner)
        wrapper_ts = self.timestamp if ts_type == LOG_APPEND_TIME else None
        for entry in inner:
            key, value = entry.key_value()
            ts = entry.timestamp if wrapper_ts is None else wrapper_ts
            yield Record(key, value, ts, [], entry.offset + shift, -1, ts_type)

    @property
    def base_offset(self) -> int:
        """First offset held: the offset itself, or for a wrapper the first inner (decompresses)."""
        if not self.is_compressed:
            return self.offset
        inner = self.inner_entries()
        return inner[0].offset + self._shift(inner)

    def _shift(self, inner: list[LegacyEntry]) -> int:
        """What turns inner offsets into absolute ones (Kafka's absoluteBaseOffset).

        Magic 1 inner offsets are relative: wrapper offset - last inner offset. A negative
        result (a producer-side set, wrapper offset 0) means they are used as they are.
        """
        if self.magic == 0:
            return 0
        base = self.offset - inner[-1].offset
        return base if base >= 0 else 0

    @property
    def records_count(self) -> int:
        return len(self.inner_entries()) if self.is_compressed else 1

    def __repr__(self) -> str:
        return (
            f"LegacyEntry(position={self.position}, offset={self.offset}, magic={self.magic}, "
            f"size={self.size}, compression={self.compression})"
        )


# --- writing --------------------------------------------------------------------------------


def encode_message(
    offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic >= 1:
        body += TIMESTAMP.pack(timestamp)
    for part in (key, value):
        if part is None:
            body += LENGTH.pack(-1)
        else:
            body += LENGTH.pack(len(part))
            body += part
    return struct.pack(">qiI", offset, 4 + len(body), crc32(body)) + bytes(body)


def build_entries(
    records: Sequence[Record],
    magic: int,
    *,
    compression_id: int = codecs.NONE,
    log_append_time: int | None = None,
    xerial_snappy: bool = True,
) -> bytes:
    """Messages as a broker stores them: one per record, or one compressed wrapper for all.

    Records carry assigned absolute offsets (gaps allowed) and timestamps.
    """
    if magic not in (0, 1):
        raise ValueError("legacy magic must be 0 or 1")
    if compression_id == codecs.ZSTD:
        raise ValueError("zstd needs magic 2")
    if not records:
        raise ValueError("a legacy message set needs at least one record")
    ts_attr = ATTR_TIMESTAMP_TYPE if (log_append_time is not None and magic >= 1) else 0

    def ts_of(rec: Record) -> int:
        return NO_TIMESTAMP if magic == 0 else rec.timestamp

    if compression_id == codecs.NONE:
        out = bytearray()
        for rec in records:
            ts = log_append_time if ts_attr else ts_of(rec)
            out += encode_message(rec.offset, magic, ts_attr, ts, rec.key, rec.value)
        return bytes(out)

    first = records[0].offset
    inner = bytearray()
    for rec in records:
        inner_offset = rec.offset if magic == 0 else rec.offset - first
        inner += encode_message(inner_offset, magic, 0, ts_of(rec), rec.key, rec.value)
    payload = codecs.compress(compression_id, inner, magic=magic, xerial_snappy=xerial_snappy)
    wrapper_ts = log_append_time if ts_attr else max(ts_of(r) for r in records)
    return encode_message(
        records[-1].offset, magic, compression_id | ts_attr, wrapper_ts, None, payload
    )
