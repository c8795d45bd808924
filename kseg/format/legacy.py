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
from itertools import chain

from kseg.format import compression as codecs
from kseg.format.batch import RECORD_CHUNK
from kseg.format.crc import crc32
from kseg.format.entry import LOG_OVERHEAD
from kseg.format.entry import MAGIC_POS as ENTRY_MAGIC_POS
from kseg.format.errors import (
    CRC_MISMATCH,
    INVALID_RECORD,
    INVALID_SIZE,
    CorruptionError,
    DecompressionError,
)
from kseg.format.record import CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP, NO_TIMESTAMP_TYPE, Record

# One field list per magic, in wire order; every position and struct below is derived from them.
_FIELDS_V0 = (
    ("offset", "q"),  # a wrapper's: its LAST inner offset
    ("message_size", "i"),  # bytes after this field
    ("crc", "I"),  # CRC-32 of [magic, end of message)
    ("magic", "b"),
    ("attributes", "b"),
    ("key_length", "i"),  # -1: null key; then the key, valueLength i32, the value
)
_FIELDS_V1 = _FIELDS_V0[:5] + (("timestamp", "q"),) + _FIELDS_V0[5:]


def _positions(fields) -> dict[str, int]:
    out, p = {}, 0
    for name, code in fields:
        out[name] = p
        p += struct.calcsize(">" + code)
    return out


FIELD_POS = {0: _positions(_FIELDS_V0), 1: _positions(_FIELDS_V1)}
_V0, _V1 = FIELD_POS[0], FIELD_POS[1]
PREFIX = struct.Struct(">" + "".join(c for _, c in _FIELDS_V0[:5]))  # up to attributes: both
HEADER_V1 = struct.Struct(">" + "".join(c for _, c in _FIELDS_V1[:6]))  # up to the timestamp
_OFFSET_SIZE_CRC = struct.Struct(">" + "".join(c for _, c in _FIELDS_V0[:3]))
_MAGIC_ATTRIBUTES = struct.Struct(">" + "".join(c for _, c in _FIELDS_V0[3:5]))
TIMESTAMP = struct.Struct(">q")
LENGTH = struct.Struct(">i")  # key length, value length
CRC_POS = _V0["crc"]  # 12
MAGIC_POS = _V0["magic"]  # 16
CRC_COVERAGE_START = MAGIC_POS
TIMESTAMP_POS = _V1["timestamp"]  # 18
KEY_LENGTH_POS = {0: _V0["key_length"], 1: _V1["key_length"]}  # 18, 26
assert _V0["message_size"] + LENGTH.size == LOG_OVERHEAD and PREFIX.size == TIMESTAMP_POS
assert MAGIC_POS == ENTRY_MAGIC_POS
# size field minimum: everything after it with an empty key and value (crc, magic, attributes,
# [timestamp], key length, value length): 14 for magic 0, 22 for magic 1
RECORD_OVERHEAD = {m: KEY_LENGTH_POS[m] + 2 * LENGTH.size - LOG_OVERHEAD for m in (0, 1)}
_V0_OVERHEAD = RECORD_OVERHEAD[0]
_V0_KEY_LENGTH_POS, _V1_KEY_LENGTH_POS = KEY_LENGTH_POS[0], KEY_LENGTH_POS[1]
ATTR_COMPRESSION = 0x07
_FIRST_PROBE = 1024  # check_wrapper's first decompression: most first messages fit
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
        "_summary",
        "_kept",
        "_inner_size",
    )

    def __init__(self, buf, position: int, source: str | None = None) -> None:
        self.buf = buf
        self.position = position
        self.source = source  # a label (the file) for error messages only
        self._summary: tuple[int, int] | None = None
        # a wrapper's decompressed value kept for record_chunks (limit used, bytes): see keep
        self._kept: tuple[int, bytes] | None = None
        self._inner_size: int | None = None
        self.offset, self.message_size, self.crc, self.magic, self.attributes = PREFIX.unpack_from(
            buf, position
        )
        if self.magic >= 1 and self.message_size >= RECORD_OVERHEAD[1]:
            (self.timestamp,) = TIMESTAMP.unpack_from(buf, position + TIMESTAMP_POS)
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
            return crc32(mv[self.position + CRC_COVERAGE_START : self.position + self.size])

    @property
    def crc_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def validate(self) -> None:
        """Raise unless size, CRC and key/value lengths are consistent (what Kafka accepts)."""
        minimum = RECORD_OVERHEAD.get(self.magic, _V0_OVERHEAD)
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
        pos = self.position + (_V1_KEY_LENGTH_POS if self.magic >= 1 else _V0_KEY_LENGTH_POS)
        parts = []
        for name in ("key", "value"):
            if pos + LENGTH.size > end:
                raise self._error(f"{name} length field past the end of the message", field=name)
            (n,) = LENGTH.unpack_from(self.buf, pos)
            pos += LENGTH.size
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

    def _inner_data(self, max_decompressed: int) -> bytes:
        """The decompressed value of a wrapper (bounded by ``max_decompressed`` bytes)."""
        return self._decompressed(codecs.decompress, max_decompressed)

    def _decompressed(self, how, *args) -> bytes:
        """``how(codec, value, *args)`` on a wrapper's value, refusing what Kafka's reader
        (AbstractLegacyRecordBatch.DeepRecordsIterator) refuses before decompressing: zstd, which
        only v2 batches may use, and a null value."""
        if self.compression_id == codecs.ZSTD:
            raise self._error(
                f"zstd compression in a magic {self.magic} wrapper: Kafka allows zstd only in v2"
                " batches and refuses to read this one",
                field="attributes",
            )
        _, value = self.key_value()
        if value is None:
            raise self._error("compressed wrapper message has a null value", field="value")
        try:
            return how(self.compression_id, value, *args)
        except DecompressionError as exc:
            exc.field = f"value ({self.compression}, payload byte {exc.position or 0})"
            exc.position, exc.offset = self.position, self.offset
            raise exc.in_file(self.source) if self.source else exc from None

    def _inner_header(self, data, pos: int, n: int) -> tuple[int, int, int, int, int, int]:
        """Check the inner message at ``data[pos:]`` (of ``n`` bytes) as Kafka's
        DataLogInputStream and DeepRecordsIterator read it: a size of at least the minimum of ITS
        magic, inside the data, magic 0 or 1 (not necessarily the wrapper's: Kafka reads a magic-0
        message in a magic-1 wrapper), not itself compressed. (offset, size, crc, magic,
        attributes, end)."""
        if n - pos < PREFIX.size:
            raise self._error(f"truncated inner message at decompressed byte {pos}", field="value")
        offset, size, crc, magic, attributes = PREFIX.unpack_from(data, pos)
        end = pos + LOG_OVERHEAD + size
        if magic not in RECORD_OVERHEAD:
            raise self._error(
                f"inner message at decompressed byte {pos} has magic {magic} (legacy messages"
                " are magic 0 or 1)",
                field="value",
            )
        if size < RECORD_OVERHEAD[magic] or end > n:
            raise self._error(
                f"inner message at decompressed byte {pos} has invalid size {size}",
                field="value",
            )
        if attributes & ATTR_COMPRESSION:
            raise self._error("compressed inner message inside a compressed wrapper", field="value")
        return offset, size, crc, magic, attributes, end

    def check_wrapper(self) -> None:
        """What Kafka's reader checks before it hands out a wrapper's first message, at the cost
        of decompressing that message only: a codec legacy messages may use (not zstd), a value,
        and at least one inner message (Kafka: "Found invalid compressed record set with no inner
        records"). The legacy counterpart of a v2 header's records count, for header-only checks;
        inner_summary checks every inner message."""
        if not self.is_compressed or self._summary is not None:
            return
        head = self._decompressed(codecs.decompress_head, _FIRST_PROBE)
        if len(head) == _FIRST_PROBE:  # the first message may be longer: all of it, if sane
            (size,) = LENGTH.unpack_from(head, LOG_OVERHEAD - LENGTH.size)
            if _FIRST_PROBE < LOG_OVERHEAD + size <= codecs.DEFAULT_MAX_DECOMPRESSED:
                head = self._decompressed(codecs.decompress_head, LOG_OVERHEAD + size)
        if not head:
            self._empty()
        self._inner_header(head, 0, len(head))

    def _empty(self):
        raise self._error(
            "compressed wrapper message holds no messages (Kafka's reader refuses it: no inner"
            " records)",
            field="value",
        )

    def _scan_inner(self, data: bytes) -> tuple[int, int, int]:
        """Check every inner message of ``data`` (size, magic, no nesting, CRC) without building
        an object per message: (count, first inner offset, last inner offset). Nested wrappers are
        refused, as Kafka refuses them, so decompression never recurses."""
        n = len(data)
        check = self._inner_header
        count = 0
        first = last = 0
        pos = 0
        with memoryview(data) as mv:
            while pos < n:
                offset, size, crc, magic, attributes, end = check(data, pos, n)
                computed = crc32(mv[pos + CRC_COVERAGE_START : end])
                if computed != crc:
                    raise CorruptionError(
                        f"inner message CRC-32 mismatch at decompressed byte {pos}",
                        kind=CRC_MISMATCH,
                        position=self.position,
                        field="value.crc",
                        stored=crc,
                        computed=computed,
                        offset=self.offset,
                        file=self.source,
                    )
                if count == 0:
                    first = offset
                last = offset
                count += 1
                pos = end
        if not count:
            self._empty()
        self._shift(last)  # a magic-1 wrapper offset below its last inner offset: refused
        return count, first, last

    def inner_summary(
        self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED, *, keep: bool = False
    ) -> tuple[int, int]:
        """(records count, first absolute offset) of a wrapper, checked; decompresses once and
        keeps the two numbers. ``keep``: also keep the decompressed bytes until the next
        record_chunks() takes them (dump asks for the count, then the records), so the wrapper
        is decompressed once, not twice."""
        if self._summary is None:
            data = self._inner_data(max_decompressed)
            self._inner_size = len(data)
            count, first, last = self._scan_inner(data)
            self._summary = (count, first + self._shift(last))
            if keep:
                self._kept = (max_decompressed, data)
        return self._summary

    def decompressed_size(self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED) -> int:
        """Bytes a wrapper's value decompresses to (no second decompression after
        inner_summary)."""
        if self._inner_size is None:
            self._inner_size = len(self._inner_data(max_decompressed))
        return self._inner_size

    def _take_kept(self, max_decompressed: int) -> bytes | None:
        """The bytes inner_summary(keep=True) kept, if decompressing under ``max_decompressed``
        would give exactly them (it succeeded under a limit no larger, or they are below it);
        else None: the caller decompresses, and meets the limit's own error."""
        kept, self._kept = self._kept, None
        if kept is None:
            return None
        limit, data = kept
        return data if limit <= max_decompressed or len(data) < max_decompressed else None

    def record_tuples(
        self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED
    ) -> Iterator[tuple]:
        """Records as tuples in Record's field order (see RecordBatch.record_tuples)."""
        return chain.from_iterable(self.record_chunks(max_decompressed))

    def records(self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED) -> Iterator[Record]:
        for chunk in self.record_chunks(max_decompressed):
            for t in chunk:
                yield Record(*t)

    def record_chunks(
        self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED
    ) -> Iterator[list[tuple]]:
        """Records as lists of at most RECORD_CHUNK tuples (see RecordBatch.record_chunks). The
        inner messages are all checked before the first is handed out (the offsets of a magic 1
        wrapper depend on its last message), but only one list of them exists at a time."""
        covers = getattr(self.buf, "covers", None)  # a buffer read on demand (storage.mapped)
        if covers is not None and not covers(self.position, self.position + self.size):
            # an entry kept after the walk released its bytes: decode a copy of just them
            copy = LegacyEntry(
                self.buf.read_range(self.position, self.position + self.size), 0, self.source
            )
            copy._summary, copy._kept, self._kept = self._summary, self._kept, None
            try:
                yield from copy.record_chunks(max_decompressed)
            except CorruptionError as exc:
                if exc.position is not None:
                    exc.position += self.position
                raise
            return
        ts_type = self.timestamp_type
        if not self.is_compressed:
            key, value = self.key_value()
            yield [(key, value, self.timestamp, [], self.offset, -1, ts_type)]
            return
        data = self._take_kept(max_decompressed)
        if data is None:
            data = self._inner_data(max_decompressed)
        if self._summary is None:  # checked once per entry (dump asks for the count first)
            count, first, last = self._scan_inner(data)
            self._summary = (count, first + self._shift(last))
        count, first_absolute = self._summary
        shift = first_absolute - LegacyEntry(data, 0).offset
        wrapper_ts = self.timestamp if ts_type == LOG_APPEND_TIME else None
        out: list[tuple] = []
        pos, n = 0, len(data)
        while pos < n:
            entry = LegacyEntry(data, pos)
            key, value = entry.key_value()
            if entry.magic == 0:  # no timestamp, whatever the wrapper says (LegacyRecord)
                out.append(
                    (key, value, NO_TIMESTAMP, [], entry.offset + shift, -1, NO_TIMESTAMP_TYPE)
                )
            else:
                ts = entry.timestamp if wrapper_ts is None else wrapper_ts
                out.append((key, value, ts, [], entry.offset + shift, -1, ts_type))
            if len(out) >= RECORD_CHUNK:
                yield out
                out = []
            pos += entry.size
        if out:
            yield out

    @property
    def base_offset(self) -> int:
        """First offset held: the offset itself, or for a wrapper the first inner (decompresses)."""
        if not self.is_compressed:
            return self.offset
        return self.inner_summary()[1]

    def _shift(self, last_inner_offset: int) -> int:
        """What turns inner offsets into absolute ones (Kafka's absoluteBaseOffset in
        DeepRecordsIterator).

        Magic 1 inner offsets are relative: wrapper offset - last inner offset. A wrapper offset
        of 0 (a producer-side set, written so by some librdkafka versions) means they are used as
        they are; any other wrapper offset below the last inner offset is invalid.
        """
        if self.magic == 0 or self.offset == 0:
            return 0
        if self.offset < last_inner_offset:
            raise self._error(
                f"wrapper offset {self.offset} is below its last inner offset {last_inner_offset}"
                " (and not 0): Kafka refuses this magic 1 message set",
                field="offset",
            )
        return self.offset - last_inner_offset

    @property
    def records_count(self) -> int:
        return self.inner_summary()[0] if self.is_compressed else 1

    def __repr__(self) -> str:
        return (
            f"LegacyEntry(position={self.position}, offset={self.offset}, magic={self.magic}, "
            f"size={self.size}, compression={self.compression})"
        )


# --- writing --------------------------------------------------------------------------------


def encode_message(
    offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    body = bytearray(_MAGIC_ATTRIBUTES.pack(magic, attributes))
    if magic >= 1:
        body += TIMESTAMP.pack(timestamp)
    for part in (key, value):
        if part is None:
            body += LENGTH.pack(-1)
        else:
            body += LENGTH.pack(len(part))
            body += part
    size = CRC_COVERAGE_START - LOG_OVERHEAD + len(body)
    return _OFFSET_SIZE_CRC.pack(offset, size, crc32(body)) + bytes(body)


def build_entries(
    records: Sequence[Record],
    magic: int,
    *,
    compression_id: int = codecs.NONE,
    log_append_time: int | None = None,
    xerial_snappy: bool = True,
    inner_magic: int | None = None,
    wrapper_offset: int | None = None,
    allow_zstd: bool = False,
) -> bytes:
    """Messages as a broker stores them: one per record, or one compressed wrapper for all.

    Records carry assigned absolute offsets (gaps allowed) and timestamps. For fixtures, shapes
    Kafka's reader judges (AbstractLegacyRecordBatch): ``inner_magic`` writes a compressed
    wrapper's messages in another magic (valid: Kafka reads a magic-0 message in a magic-1
    wrapper); no records with a codec and ``wrapper_offset`` writes a wrapper holding no message
    (invalid); ``allow_zstd`` writes a zstd wrapper (invalid: zstd is for v2 only).
    """
    if magic not in (0, 1):
        raise ValueError("legacy magic must be 0 or 1")
    inner_magic = magic if inner_magic is None else inner_magic
    if inner_magic not in (0, 1):
        raise ValueError("legacy inner magic must be 0 or 1")
    if compression_id == codecs.ZSTD and not allow_zstd:
        raise ValueError("zstd needs magic 2")
    empty_wrapper = not records and compression_id != codecs.NONE and wrapper_offset is not None
    if not records and not empty_wrapper:
        raise ValueError("a legacy message set needs at least one record")
    if wrapper_offset is not None and not empty_wrapper:
        raise ValueError("wrapper_offset is only for a compressed wrapper holding no message")
    ts_attr = ATTR_TIMESTAMP_TYPE if (log_append_time is not None and magic >= 1) else 0

    def ts_of(rec: Record, m: int = magic) -> int:
        return NO_TIMESTAMP if m == 0 else rec.timestamp

    if compression_id == codecs.NONE:
        out = bytearray()
        for rec in records:
            ts = log_append_time if ts_attr else ts_of(rec)
            out += encode_message(rec.offset, magic, ts_attr, ts, rec.key, rec.value)
        return bytes(out)

    inner = bytearray()
    for rec in records:
        inner_offset = rec.offset if magic == 0 else rec.offset - records[0].offset
        inner += encode_message(
            inner_offset, inner_magic, 0, ts_of(rec, inner_magic), rec.key, rec.value
        )
    payload = codecs.compress(compression_id, inner, magic=magic, xerial_snappy=xerial_snappy)
    if ts_attr:
        wrapper_ts = log_append_time
    else:
        wrapper_ts = max((ts_of(r) for r in records), default=NO_TIMESTAMP)
    last = wrapper_offset if empty_wrapper else records[-1].offset
    return encode_message(last, magic, compression_id | ts_attr, wrapper_ts, None, payload)
