"""Walking a `.log` (or KRaft `.checkpoint`): entries of any magic, checked as Kafka's recovery does.

Every entry starts ``offset i64, size i32`` and has its magic at byte 16; the magic chooses
between a v2 :class:`RecordBatch` and a legacy :class:`LegacyEntry` exactly as Kafka's
FileLogInputStream does: a (signed) magic >= 2 is read as a v2 batch, anything below as a legacy
message. The v2 magic byte lies outside the batch CRC, so a v2 batch whose magic was flipped to 7
still passes recovery; a flipped magic is reported by verify, not here (see ``v2_magic_flip``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from kseg.format.batch import HEADER_SIZE, MIN_BATCH_LENGTH, RecordBatch
from kseg.format.entry import (
    ENTRY_PREFIX,
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MAGIC_POS,
    entry_magic,
)
from kseg.format.errors import (
    INVALID_MAGIC,
    INVALID_SIZE,
    TORN_TAIL,
    ZERO_FILLED_TAIL,
    CorruptionError,
)
from kseg.format.legacy import LegacyEntry
from kseg.format.magic import CURRENT_MAGIC, MIN_ENTRY_SIZE, READER_BY_BYTE, V0, V1, V2

_ZERO_CHUNK = bytes(1 << 20)
_HEADER_PROBE = HEADER_SIZE  # a v2 header, the largest a walk reads before knowing the size
_EVERYTHING = 1 << 62
# v2 and legacy CRC facts, bound once as module ints (hot loops)
_V2_CRC_POS = V2.crc_pos
_V2_CRC_START = V2.crc_coverage_start
_V2_CRC = struct.Struct(">I")
_LEGACY_CRC_START = V0.crc_coverage_start
assert V1.crc_coverage_start == _LEGACY_CRC_START

Entry = RecordBatch | LegacyEntry


def is_zero(buf, start: int, end: int) -> bool:
    """True if ``buf[start:end]`` is all zero bytes (compared in 1 MiB chunks, no big copy).

    A buffer that knows its file's holes (storage.mapped.ShadowMap.data_region: a sparse file's
    unwritten ranges read as zeros) is compared only where data may lie, so a 100 GB sparse tail
    after a valid segment is judged in the time its written part takes."""
    ensure = getattr(buf, "ensure", None)  # a buffer read on demand (storage.mapped)
    region = getattr(buf, "data_region", None)
    with memoryview(buf) as mv:
        pos = start
        stop = end if region is None else start  # the end of the range being compared
        while pos < end:
            if pos >= stop:
                pos, stop = region(pos, end)  # the next range that may hold data
                if pos >= end:
                    break
            n = min(len(_ZERO_CHUNK), stop - pos)
            if ensure is not None:
                ensure(pos, pos + n)
            # a copy and a memcmp: ~20x faster than comparing the memoryview itself
            if mv[pos : pos + n].tobytes() != _ZERO_CHUNK[:n]:
                return False
            pos += n
    return True


def _tail_error(
    buf, pos: int, end: int, message: str, kind: str, field: str | None
) -> CorruptionError:
    if is_zero(buf, pos, end):
        return CorruptionError(
            f"{end - pos} zero bytes from here to the end (zero-filled tail)",
            kind=ZERO_FILLED_TAIL,
            position=pos,
        )
    return CorruptionError(message, kind=kind, position=pos, field=field)


def v2_crc_matches(buf, pos: int, end: int) -> bool:
    """Does the entry at ``pos`` hold a v2 batch whose CRC-32C (over [21, size)) matches, whatever
    its magic byte says? Used to tell a flipped magic byte (outside the CRC) from corruption."""
    if end - pos < _V2_CRC_START:
        return False
    _, size = ENTRY_PREFIX.unpack_from(buf, pos)
    if size < MIN_BATCH_LENGTH or size > end - pos - LOG_OVERHEAD:
        return False
    (stored,) = _V2_CRC.unpack_from(buf, pos + _V2_CRC_POS)
    with memoryview(buf) as mv:
        return V2.crc(mv[pos + _V2_CRC_START : pos + LOG_OVERHEAD + size]) == stored


def bad_magic_message(magic: int, pos: int, crc_ok: bool) -> str:
    """What a v2 batch with a magic byte other than 2 means, by Kafka's reading rule."""
    where = f"magic {magic} at byte {pos + MAGIC_POS}"
    if not crc_ok:
        return f"{where}, and the {V2.entry_name} {V2.crc_name} does not match either"
    if magic > CURRENT_MAGIC:
        kafka = "Kafka keeps the batch and consumers will fail on it"
    else:
        kafka = (
            "Kafka's recovery reads it as a legacy message whose CRC-32 fails and truncates the"
            " log here (deleting every later segment)"
        )
    return (
        f"{where}: the CRC covers everything else and matches, so only this byte is wrong; {kafka}"
    )


def check_entry_header(buf, pos: int, end: int) -> None:
    """Raise the error Kafka's recovery would stop at for the entry at ``pos``, if any.

    Structural checks only (sizes, bounds, magic); CRCs are checked by ``entry.validate()``.
    """
    remaining = end - pos
    if remaining < HEADER_SIZE_UP_TO_MAGIC:
        raise _tail_error(
            buf,
            pos,
            end,
            f"{remaining} trailing bytes, too few for an entry header",
            TORN_TAIL,
            None,
        )
    offset, size = ENTRY_PREFIX.unpack_from(buf, pos)
    if size < MIN_ENTRY_SIZE:
        raise _tail_error(
            buf,
            pos,
            end,
            f"entry size {size} is below the minimum {MIN_ENTRY_SIZE}",
            INVALID_SIZE,
            "size",
        )
    if size > end - pos - LOG_OVERHEAD:
        raise _tail_error(
            buf,
            pos,
            end,
            f"entry of {size + LOG_OVERHEAD} bytes extends {size + LOG_OVERHEAD - remaining} bytes past the end",
            TORN_TAIL,
            "size",
        )
    magic = entry_magic(buf, pos)
    if magic < 0:
        # Kafka reads it as a legacy message of unknown magic, whose CRC-32 then fails
        raise CorruptionError(
            f"invalid magic {magic}", kind=INVALID_MAGIC, position=pos, field="magic", offset=offset
        )
    if magic >= CURRENT_MAGIC and size < MIN_BATCH_LENGTH:
        raise CorruptionError(
            f"batch length {size} is below the minimum {MIN_BATCH_LENGTH}",
            kind=INVALID_SIZE,
            position=pos,
            field="batch_length",
            offset=offset,
        )


def indexed_position_problem(buf, offset: int, position: int, end: int) -> str | None:
    """Why an offset-index entry (``offset``, ``position``) cannot be a start for a scan of the
    log ``buf[:end]`` (None: it can). Kafka writes an entry (O, P) only where a batch starts
    whose last offset is O or below (the last batch of one append may end at O: LogSegment.append
    and recover), so anything else is a lie a lookup must not follow: a negative position, one at
    or past the end of the log, one where no valid batch starts (size, magic, CRC), or one whose
    batch holds offsets past O (a scan from there would skip the offsets before it)."""
    if position < 0:
        return f"position {position} is negative"
    if position >= end:
        return f"position {position} is at or past the end of the {end}-byte log"
    try:
        entry = next(iter_entries(buf, position, end, validate=True))
    except CorruptionError as exc:
        return f"position {position} is not the start of a valid batch ({exc.message})"
    if entry.last_offset > offset:
        return (
            f"the batch at byte {position} ends at offset {entry.last_offset}, past the"
            f" entry's offset {offset}"
        )
    return None


def iter_entries(
    buf,
    start: int = 0,
    end: int | None = None,
    *,
    validate: bool = False,
    source: str | None = None,
) -> Iterator[Entry]:
    """Yield each top-level entry of ``buf[start:end]`` in order.

    Stops by raising :class:`CorruptionError` at the first entry Kafka's recovery would stop at
    (torn tail, zero-filled tail, bad size, bad magic; with ``validate`` also CRC and legacy
    key/value structure). Entries before it have been yielded. ``buf`` must slice to bytes
    (bytes or mmap); a memoryview is copied once. ``source`` labels errors (e.g. the file name),
    including those raised later by an entry's ``records()``.
    """
    if isinstance(buf, (memoryview, bytearray)):
        buf = bytes(buf)  # slices must be immutable bytes
    if end is None:
        end = len(buf)
    pos = start
    try:
        yield from _walk(buf, pos, end, validate, source)
    except CorruptionError as exc:
        raise exc.in_file(source) if source else exc from None


class _Behind:
    """Lets the kernel drop pages the walk has passed (for a memory-mapped file: MADV_DONTNEED
    only unmaps them; the data stays in the page cache and refaults if touched again), so the
    resident size of a 1 GiB walk stays ~64 MiB instead of growing to the file size."""

    STEP = 64 << 20
    PAGE = 4096

    def __init__(self, buf, start: int) -> None:
        import mmap

        # a buffer that reads on demand (storage.mapped.ShadowMap) releases pages itself
        self.advise = None if hasattr(buf, "ensure") else getattr(buf, "madvise", None)
        self.flag = getattr(mmap, "MADV_DONTNEED", None)
        self.done = start - start % self.PAGE
        self.next = (
            self.done + self.STEP if self.advise is not None and self.flag is not None else 1 << 62
        )

    def passed(self, pos: int) -> None:
        upto = pos - pos % self.PAGE - self.PAGE  # keep the page the current entry starts in
        if upto > self.done:
            self.advise(self.flag, self.done, upto - self.done)
            self.done = upto
        self.next = self.done + self.STEP


def _walk(buf, pos: int, end: int, validate: bool, source: str | None) -> Iterator[Entry]:
    behind = _Behind(buf, pos)
    ensure = getattr(buf, "ensure", None)
    ready = _EVERYTHING if ensure is None else -1  # buf[:ready] may be touched (storage.mapped)
    while pos < end:
        if pos >= behind.next:
            behind.passed(pos)
        if pos + _HEADER_PROBE > ready:
            ready = ensure(pos, min(end, pos + _HEADER_PROBE))
        check_entry_header(buf, pos, end)
        size = ENTRY_PREFIX.unpack_from(buf, pos)[1] + LOG_OVERHEAD
        if pos + size > ready:
            ready = ensure(pos, pos + size)
        entry = READER_BY_BYTE[buf[pos + MAGIC_POS]](buf, pos, source)  # magic.format_of
        if validate:
            entry.validate()
        yield entry
        pos += entry.size


# walk_headers yields plain tuples (a NamedTuple costs ~0.5 us an entry on this hot path):
#   (position, size, magic, first_offset, last_offset, max_timestamp, records_count,
#    attributes, producer_id, crc_ok, partition_leader_epoch)
# magic: as stored (a v2 batch may carry a flipped magic 3..127: it is read as v2, as Kafka does).
# first_offset: v2 base offset; legacy: the entry's offset (a wrapper's LAST offset).
# max_timestamp: -1 for magic 0. records_count, producer_id, partition_leader_epoch: -1 for legacy.
_V2 = V2.header
_LEGACY = V1.header  # offset, size, crc, magic, attributes, timestamp (magic 1)
_LEGACY_PREFIX = V0.header
_V2_MAGIC = V2.magic
_V1_MAGIC = V1.magic


def walk_headers(buf, start: int = 0, end: int | None = None) -> Iterator[tuple]:
    """Header-only walk with CRC checks: no record decoding, no decompression, no copies.

    Raises :class:`CorruptionError` at the first structural problem (like ``iter_entries``);
    CRC mismatches are reported in ``crc_ok`` so the caller decides (recovery stops there).
    """
    v2_crc, legacy_crc = V2.crc, V1.crc
    if end is None:
        end = len(buf)
    v2_unpack = _V2.unpack_from
    legacy_unpack = _LEGACY.unpack_from
    behind = _Behind(buf, start)
    ensure = getattr(buf, "ensure", None)
    ready = _EVERYTHING if ensure is None else -1  # buf[:ready] may be touched (storage.mapped)
    with memoryview(buf) as mv:
        pos = start
        while pos < end:
            if pos >= behind.next:
                behind.passed(pos)
            if pos + _HEADER_PROBE > ready:
                ready = ensure(pos, min(end, pos + _HEADER_PROBE))
            # the common case inline; anything unusual goes through the full check
            if end - pos < _V2.size or buf[pos + MAGIC_POS] != _V2_MAGIC:
                check_entry_header(buf, pos, end)
            if READER_BY_BYTE[buf[pos + MAGIC_POS]] is RecordBatch:
                (base, length, ple, m, crc, attrs, lod, _bts, max_ts, pid, _pe, _bs, count) = (
                    v2_unpack(buf, pos)
                )
                size = length + LOG_OVERHEAD
                if length < MIN_BATCH_LENGTH or pos + size > end:
                    check_entry_header(buf, pos, end)  # raises with the precise kind
                if pos + size > ready:
                    ready = ensure(pos, pos + size)
                ok = v2_crc(mv[pos + _V2_CRC_START : pos + size]) == crc
                yield (pos, size, m, base, base + lod, max_ts, count, attrs, pid, ok, ple)
            else:
                magic = buf[pos + MAGIC_POS]
                if magic == _V1_MAGIC and end - pos >= _LEGACY.size:
                    off, length, crc, _m, attrs, ts = legacy_unpack(buf, pos)
                else:
                    off, length, crc, _m, attrs = _LEGACY_PREFIX.unpack_from(buf, pos)
                    ts = -1
                size = length + LOG_OVERHEAD
                if pos + size > ready:
                    ready = ensure(pos, pos + size)
                ok = legacy_crc(mv[pos + _LEGACY_CRC_START : pos + size]) == crc
                yield (pos, size, magic, off, off, ts, -1, attrs, -1, ok, -1)
            pos += size
