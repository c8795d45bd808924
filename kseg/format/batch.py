"""Record batches, magic 2: the header as one struct, a lazy view for reading, a builder.

Wire layout (all big-endian), positions derived from the field list below:

    baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 | crc u32 |
    attributes i16 | lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 |
    producerId i64 | producerEpoch i16 | baseSequence i32 | recordsCount i32 | records...
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from itertools import chain

from kseg.format import compression as codecs
from kseg.format.control import ControlRecord, end_txn_marker, parse_control
from kseg.format.crc import crc32c
from kseg.format.entry import LOG_OVERHEAD, MAGIC_POS
from kseg.format.errors import (
    CRC_MISMATCH,
    INVALID_RECORD,
    INVALID_SIZE,
    CorruptionError,
    DecompressionError,
)
from kseg.format.headers import LAZY_HEADERS, Headers, scan_headers
from kseg.format.record import CREATE_TIME, LOG_APPEND_TIME, Record
from kseg.format.varint import read_varint, varint_size, write_varint

_FIELDS = (
    ("base_offset", "q"),
    ("batch_length", "i"),  # bytes after this field
    ("partition_leader_epoch", "i"),  # not covered by the CRC: the broker rewrites it
    ("magic", "b"),
    ("crc", "I"),  # CRC-32C of [attributes, end of batch)
    ("attributes", "h"),
    ("last_offset_delta", "i"),
    ("base_timestamp", "q"),  # the delete horizon when ATTR_DELETE_HORIZON is set
    ("max_timestamp", "q"),
    ("producer_id", "q"),
    ("producer_epoch", "h"),
    ("base_sequence", "i"),
    ("records_count", "i"),
)
HEADER = struct.Struct(">" + "".join(code for _, code in _FIELDS))
FIELD_POS = {}
_p = 0
for _name, _code in _FIELDS:
    FIELD_POS[_name] = _p
    _p += struct.calcsize(">" + _code)
del _p, _name, _code

HEADER_SIZE = HEADER.size  # 61
assert FIELD_POS["partition_leader_epoch"] == LOG_OVERHEAD and FIELD_POS["magic"] == MAGIC_POS
CRC_POS = FIELD_POS["crc"]  # 17
CRC_COVERAGE_START = FIELD_POS["attributes"]
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49
MAGIC = 2
CRC = struct.Struct(">I")
_CRC_STRUCT = CRC

ATTR_COMPRESSION = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

# Records are handed out in lists of at most this many (or this many input bytes): few enough
# that the objects alive at once stay small, many enough that the per-list cost vanishes.
RECORD_CHUNK = 1024
RECORD_CHUNK_BYTES = 1 << 20
# length varint, attributes, timestamp delta, offset delta, key length, value length, header
# count: one byte each at least
MIN_RECORD_SIZE = 7


class RecordBatch:
    """A v2 batch read in place: header fields eagerly, records only when iterated."""

    __slots__ = ("buf", "position", "source") + tuple(name for name, _ in _FIELDS)

    def __init__(self, buf, position: int, source: str | None = None) -> None:
        self.buf = buf
        self.position = position
        self.source = source  # a label (the file) for error messages only
        (
            self.base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.records_count,
        ) = HEADER.unpack_from(buf, position)

    # --- derived header facts -------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression_id(self) -> int:
        return self.attributes & ATTR_COMPRESSION

    @property
    def compression(self) -> str:
        return codecs.codec_name(self.attributes & ATTR_COMPRESSION)

    @property
    def timestamp_type(self) -> str:
        return LOG_APPEND_TIME if self.attributes & ATTR_TIMESTAMP_TYPE else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & ATTR_DELETE_HORIZON else None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return _add_sequence(self.base_sequence, self.last_offset_delta)

    # --- integrity -------------------------------------------------------------------------
    def compute_crc(self) -> int:
        start = self.position + CRC_COVERAGE_START
        with memoryview(self.buf) as mv:
            return crc32c(mv[start : self.position + self.size])

    @property
    def crc_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def validate(self) -> None:
        """Raise :class:`CorruptionError` unless size and CRC are what Kafka's recovery accepts."""
        if self.batch_length < MIN_BATCH_LENGTH:
            raise CorruptionError(
                f"batch length {self.batch_length} is below the minimum {MIN_BATCH_LENGTH}",
                kind=INVALID_SIZE,
                position=self.position,
                field="batch_length",
                offset=self.base_offset,
                file=self.source,
            )
        computed = self.compute_crc()
        if computed != self.crc:
            raise CorruptionError(
                "batch CRC-32C mismatch",
                kind=CRC_MISMATCH,
                position=self.position,
                field="crc",
                stored=self.crc,
                computed=computed,
                offset=self.base_offset,
                file=self.source,
            )

    # --- records -------------------------------------------------------------------------
    def records(self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED) -> Iterator[Record]:
        """Decode the records (decompressing when needed), lazily. Errors name the batch position
        and are raised when iteration reaches them."""
        for chunk in self.record_chunks(max_decompressed):
            for t in chunk:
                yield Record(*t)

    def record_tuples(
        self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED
    ) -> Iterator[tuple]:
        """Like records(), as plain tuples in Record's field order (for hot loops)."""
        return chain.from_iterable(self.record_chunks(max_decompressed))

    def record_chunks(
        self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED
    ) -> Iterator[list[tuple]]:
        """The records as lists of at most RECORD_CHUNK tuples, decoded one list at a time: the
        Python objects alive at once stay bounded however many records the batch holds (a
        256 MiB buffer of 7-byte records would be 38 million tuples). Decompression happens on
        the first step; a bad record raises there, with the good ones before it (in its list)
        in the error's ``records``."""
        buf, base = self.buf, self.position
        covers = getattr(buf, "covers", None)  # a buffer read on demand (storage.mapped)
        if covers is not None and not covers(base, base + self.size):
            # a batch kept after the walk released its bytes: read just them again
            buf, base = buf.read_range(base, base + self.size), 0
        start = base + HEADER_SIZE
        end = base + self.size
        cid = self.attributes & ATTR_COMPRESSION
        if cid == codecs.NONE:
            data, pos = buf, start
        else:
            try:
                with memoryview(buf) as mv:
                    data = codecs.decompress(cid, mv[start:end], max_decompressed)
            except DecompressionError as exc:
                exc.field = f"records ({self.compression}, payload byte {exc.position or 0})"
                exc.position = self.position
                exc.offset = self.base_offset
                raise exc.in_file(self.source) if self.source else exc from None
            pos, end = 0, len(data)
        log_append = bool(self.attributes & ATTR_TIMESTAMP_TYPE)
        yield from iter_record_chunks(
            data,
            pos,
            end,
            self.records_count,
            self.base_offset,
            self.base_timestamp,
            self.max_timestamp if log_append else None,
            # Kafka: DefaultRecord.readFrom -- baseSequence >= 0 ? incrementSequence(baseSequence,
            # offsetDelta) : NO_SEQUENCE, whatever the producer id (4.x coordinators write
            # producerId -1 with baseSequence 0)
            self.base_sequence,
            self.position,
            self.timestamp_type,
        )

    def control_record(self, *, end_txn: bool = False) -> ControlRecord | None:
        """The (first) control record of a control batch; None for a data or empty batch.

        ``end_txn``: read it as Kafka's producer-state replay does (EndTransactionMarker
        .deserialize), which rejects any type but ABORT/COMMIT.
        """
        if not self.is_control:
            return None
        parse = end_txn_marker if end_txn else parse_control
        try:  # Kafka reads only the first record: a later bad one does not matter here
            first = next(iter(self.record_tuples()), None)
        except CorruptionError as exc:
            good = getattr(exc, "records", None)
            if not good:
                raise exc.in_file(self.source) if self.source else exc from None
            first = good[0]
        if first is None:
            return None
        key, value, *_, offset = first[:5]
        try:
            return parse(key, value)
        except CorruptionError as exc:
            exc.position, exc.offset = self.position, offset
            raise exc.in_file(self.source) if self.source else exc from None

    def __repr__(self) -> str:
        return (
            f"RecordBatch(position={self.position}, base_offset={self.base_offset}, "
            f"last_offset={self.last_offset}, count={self.records_count}, size={self.size}, "
            f"compression={self.compression})"
        )


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _wrap_timestamp_delta(base: int, delta: int) -> int:
    """The delta that gives Kafka's record timestamp: ``baseTimestamp + timestampDelta`` is a
    Java long sum, so it wraps around at the int64 limits (kafka-dump-log shows the wrapped
    value); every varint kseg reads is already an int64, only the sum can leave the range."""
    total = base + delta
    if _INT64_MIN <= total <= _INT64_MAX:
        return delta
    return ((total + (1 << 63)) % (1 << 64) - (1 << 63)) - base


def _add_sequence(base: int, delta: int) -> int:
    # Sequences wrap around at Int32.MAX_VALUE, as in DefaultRecordBatch.incrementSequence.
    if base > 0x7FFFFFFF - delta:
        return delta - (0x7FFFFFFF - base) - 1
    return base + delta


def _bad(
    message: str, batch_pos: int, index: int, data_pos: int, decoded: list | None = None
) -> CorruptionError:
    exc = CorruptionError(
        message,
        kind=INVALID_RECORD,
        position=batch_pos,
        field=f"records[{index}] (byte {data_pos})",
    )
    exc.records = decoded or []  # the records before the bad one, still good
    return exc


def iter_record_chunks(
    data,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    base_sequence: int,
    batch_pos: int,
    timestamp_type: str,
) -> Iterator[list[tuple]]:
    """Decode ``count`` records from ``data[pos:end]`` as tuples in Record's field order
    ``(key, value, timestamp, headers, offset, sequence, timestamp_type)``, handed out in lists
    of at most RECORD_CHUNK records (or RECORD_CHUNK_BYTES of input), so that the objects alive
    at once are bounded whatever ``count`` and the buffer hold.

    Hot path: one- and two-byte varints are decoded inline (record and value lengths of typical
    records take two bytes). ``data`` must slice to ``bytes`` (bytes, mmap). Every length is
    checked against the record's own length before it is used, so a lie cannot read outside the
    batch or allocate much; a count the bytes cannot hold (a record takes at least
    MIN_RECORD_SIZE bytes) is refused before anything is decoded. On a bad record the error's
    ``records`` holds the good ones of the current list before it.
    """
    if count < 0:
        raise _bad(f"negative records count {count}", batch_pos, 0, pos)
    if count > (end - pos) // MIN_RECORD_SIZE:
        raise _bad(
            f"batch declares {count} records, more than {end - pos} bytes can hold"
            f" (a record takes at least {MIN_RECORD_SIZE})",
            batch_pos,
            0,
            pos,
        )
    out: list[tuple] = []
    append = out.append
    i = 0
    rec_start = pos
    cut, cut_pos = RECORD_CHUNK, pos + RECORD_CHUNK_BYTES
    # a delta of at most ts_limit either way keeps base + delta inside int64 (no wrap to do);
    # a one-byte delta (-64..63) can leave it only from a base this close to the limits
    ts_limit = _INT64_MAX - abs(base_timestamp)
    near_edge = ts_limit < 64
    try:
        while i < count:
            rec_start = pos
            if pos >= end:
                raise _bad(f"batch declares {count} records but holds {i}", batch_pos, i, pos)
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                z = (b & 0x7F) | (data[pos + 1] << 7)
                length = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                length, pos = read_varint(data, pos)
            rec_end = pos + length
            if length < 6 or rec_end > end:
                raise _bad(
                    f"record length {length} does not fit the batch", batch_pos, i, rec_start
                )
            pos += 1  # attributes: unused
            b = data[pos]
            if b < 0x80 and not near_edge:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                ts_delta, pos = read_varint(data, pos)
                if not -ts_limit <= ts_delta <= ts_limit:
                    ts_delta = _wrap_timestamp_delta(base_timestamp, ts_delta)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = read_varint(data, pos)
            b = data[pos]
            if b < 0x80:
                klen = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                z = (b & 0x7F) | (data[pos + 1] << 7)
                klen = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                klen, pos = read_varint(data, pos)
            if klen < 0:
                if klen != -1:
                    raise _bad(f"invalid key length {klen}", batch_pos, i, rec_start)
                key = None
            else:
                if pos + klen > rec_end:
                    raise _bad(f"key length {klen} exceeds the record", batch_pos, i, rec_start)
                key = data[pos : pos + klen]
                pos += klen
            b = data[pos]
            if b < 0x80:
                vlen = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                z = (b & 0x7F) | (data[pos + 1] << 7)
                vlen = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                vlen, pos = read_varint(data, pos)
            if vlen < 0:
                if vlen != -1:
                    raise _bad(f"invalid value length {vlen}", batch_pos, i, rec_start)
                value = None
            else:
                if pos + vlen > rec_end:
                    raise _bad(f"value length {vlen} exceeds the record", batch_pos, i, rec_start)
                value = data[pos : pos + vlen]
                pos += vlen
            b = data[pos]
            if b < 0x80:
                hcount = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                hcount, pos = read_varint(data, pos)
            if hcount and (hcount < 0 or 2 * hcount > rec_end - pos):
                raise _bad(f"invalid header count {hcount}", batch_pos, i, rec_start)
            if hcount > LAZY_HEADERS:
                # checked without an object per header; decoded when iterated
                hstart = pos
                pos = scan_headers(data, pos, rec_end, hcount)
                headers = Headers.of_record(data, hstart, pos, hcount)
            elif hcount:
                headers = []
                for _ in range(hcount):
                    hklen, pos = read_varint(data, pos)
                    if hklen < 0 or pos + hklen > rec_end:
                        raise _bad(f"invalid header key length {hklen}", batch_pos, i, rec_start)
                    hkey = data[pos : pos + hklen].decode("utf-8", "replace")
                    pos += hklen
                    hvlen, pos = read_varint(data, pos)
                    if hvlen < 0:
                        if hvlen != -1:
                            raise _bad(
                                f"invalid header value length {hvlen}", batch_pos, i, rec_start
                            )
                        hval = None
                    else:
                        if pos + hvlen > rec_end:
                            raise _bad(
                                f"header value length {hvlen} exceeds the record",
                                batch_pos,
                                i,
                                rec_start,
                            )
                        hval = data[pos : pos + hvlen]
                        pos += hvlen
                    headers.append((hkey, hval))
            else:
                headers = []
            if pos != rec_end:
                raise _bad(
                    f"record fields end at {pos - rec_start} but its length says {rec_end - rec_start}",
                    batch_pos,
                    i,
                    rec_start,
                )
            append(
                (
                    key,
                    value,
                    base_timestamp + ts_delta if log_append_time is None else log_append_time,
                    headers,
                    base_offset + offset_delta,
                    -1 if base_sequence < 0 else _add_sequence(base_sequence, offset_delta),
                    timestamp_type,
                )
            )
            i += 1
            if i >= cut or pos >= cut_pos:
                yield out
                out = []
                append = out.append
                cut, cut_pos = i + RECORD_CHUNK, pos + RECORD_CHUNK_BYTES
    except IndexError:
        raise _bad("record truncated", batch_pos, i, rec_start, out) from None
    except CorruptionError as exc:
        if exc.field is None:  # from read_varint: position is within data
            raise _bad(exc.message, batch_pos, i, rec_start, out) from None
        exc.records = out
        raise
    if pos != end:
        raise _bad(
            f"{end - pos} bytes after the last of {count} records", batch_pos, count, pos, out
        )
    if out:
        yield out


# --- writing --------------------------------------------------------------------------------


def encode_record(out: bytearray, rec: Record, offset_delta: int, timestamp_delta: int) -> None:
    """Append one record (length-prefixed) to ``out``."""
    body = bytearray(b"\x00")  # attributes
    write_varint(body, timestamp_delta)
    write_varint(body, offset_delta)
    for part in (rec.key, rec.value):
        if part is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(part))
            body += part
    write_varint(body, len(rec.headers))
    for hkey, hval in rec.headers:
        kb = hkey.encode("utf-8") if isinstance(hkey, str) else bytes(hkey)
        write_varint(body, len(kb))
        body += kb
        if hval is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(hval))
            body += hval
    write_varint(out, len(body))
    out += body


def record_size(rec: Record, offset_delta: int, timestamp_delta: int) -> int:
    out = bytearray()
    encode_record(out, rec, offset_delta, timestamp_delta)
    return len(out)


def build_batch(
    records: Iterable[Record],
    base_offset: int,
    *,
    compression_id: int = codecs.NONE,
    log_append_time: int | None = None,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = 0,
    last_offset: int | None = None,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    delete_horizon_ms: int | None = None,
    xerial_snappy: bool = True,
) -> bytes:
    """Serialize one v2 batch. Records carry absolute offsets and timestamps (already assigned).

    ``last_offset`` may exceed the last record's offset (compaction keeps a batch's last offset);
    with no records it makes an empty batch. ``log_append_time`` sets LogAppendTime: the batch
    max timestamp becomes that time and record timestamps are left as given.
    """
    records = list(records)
    if records:
        first_ts = records[0].timestamp
        base_ts = first_ts if base_timestamp is None else base_timestamp
        computed_max = max(r.timestamp for r in records)
        rec_last = records[-1].offset
    else:
        base_ts = -1 if base_timestamp is None else base_timestamp
        computed_max = -1
        rec_last = base_offset - 1
    if delete_horizon_ms is not None:
        base_ts = delete_horizon_ms
    last = rec_last if last_offset is None else last_offset
    if last < base_offset and records:
        raise ValueError("last_offset is before the batch's records")
    if not records and last_offset is None:
        raise ValueError("an empty batch needs last_offset")
    if last - base_offset > 0x7FFFFFFF:
        raise ValueError("a batch cannot span more than 2^31-1 offsets")
    if log_append_time is not None:
        max_ts = log_append_time
    else:
        max_ts = computed_max if max_timestamp is None else max_timestamp

    body = bytearray()
    ts_origin = records[0].timestamp if records else 0
    if delete_horizon_ms is not None or base_timestamp is not None:
        ts_origin = base_ts
    prev = base_offset - 1
    for rec in records:
        if rec.offset is None or rec.offset <= prev:
            raise ValueError("record offsets must be assigned and strictly increasing")
        prev = rec.offset
        encode_record(body, rec, rec.offset - base_offset, rec.timestamp - ts_origin)
    if compression_id != codecs.NONE:
        body = codecs.compress(compression_id, body, magic=MAGIC, xerial_snappy=xerial_snappy)

    attributes = compression_id
    if log_append_time is not None:
        attributes |= ATTR_TIMESTAMP_TYPE
    if transactional:
        attributes |= ATTR_TRANSACTIONAL
    if control:
        attributes |= ATTR_CONTROL
    if delete_horizon_ms is not None:
        attributes |= ATTR_DELETE_HORIZON
    out = bytearray(HEADER_SIZE)
    HEADER.pack_into(
        out,
        0,
        base_offset,
        HEADER_SIZE - LOG_OVERHEAD + len(body),
        partition_leader_epoch,
        MAGIC,
        0,
        attributes,
        last - base_offset,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    out += body
    with memoryview(out) as mv:
        _CRC_STRUCT.pack_into(out, CRC_POS, crc32c(mv[CRC_COVERAGE_START:]))
    return bytes(out)


__all__ = [
    "HEADER",
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "RecordBatch",
    "build_batch",
    "iter_record_chunks",
    "encode_record",
    "record_size",
    "varint_size",
]
