"""Walking a `.log` past damage: where intact entries start again after a bad region (resync).

Kafka's recovery stops at the first entry it cannot read (log.py's ``iter_entries``) and
truncates there. A resync walk yields the same entries up to that point, then a
:class:`Skipped` naming the unreadable byte range and the offsets it must have held, then the
intact entries after it, and so on to the end.

Where entries resume (``_resume``), in this order:
1. the damaged entry's own size field, if the entry it points to is intact and chains on (a bit
   flip inside a batch leaves its length right: the common case costs one batch);
2. otherwise the first byte position after the damage where an intact entry starts: a plausible
   header (magic 0, 1 or 2; sizes in bounds; offsets above the last good entry's), a matching
   CRC (CRC-32C for v2, CRC-32 for legacy messages), and a chain: the entry after it is intact
   too with rising offsets, or it ends at the end of the data (or where only zeros follow).

The offsets rule keeps a record value that holds a batch written by a producer (base offset 0)
from being taken for a batch of the log; the chain rule keeps a stray CRC match from starting a
resync. A candidate found inside the extent the damaged entry's size field claims may be that
entry's own payload: it is taken, and the Skipped says ``ambiguous``.

This module is the reference (the one source of the rules); faster paths must give the same
events.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from kseg.format.batch import RecordBatch
from kseg.format.entry import ENTRY_PREFIX, LOG_OVERHEAD, MAGIC_POS
from kseg.format.errors import ZERO_FILLED_TAIL, CorruptionError
from kseg.format.log import Entry, is_zero, iter_entries
from kseg.format.magic import MIN_ENTRY_SIZE

_MAX_MAGIC = 2  # a candidate found by scanning must carry a magic Kafka writes


class Skipped(NamedTuple):
    """An unreadable byte range ``[start, end)`` of a log and why.

    ``first_offset``..``last_offset``: the offsets it must have held, from the entries around it
    (the last good entry's last offset + 1 to the next good entry's first offset - 1); an upper
    bound, since compaction leaves gaps too. None when unknown (no entry after it: up to the end
    of the data) or when it holds none (a zero-filled tail, which Kafka's recovery drops and
    which loses nothing). ``kind`` and ``reason``: the error Kafka's recovery stops at on its
    first byte. ``ambiguous``: entries resumed at a position inside the extent the damaged
    entry's own size field claims (they may be that entry's payload).
    """

    start: int
    end: int
    first_offset: int | None
    last_offset: int | None
    kind: str
    reason: str
    ambiguous: bool = False


def first_offset(entry: Entry) -> int:
    """The first offset an entry holds as far as its header says (a legacy wrapper's own
    offset is its LAST inner offset; its first needs the inner messages: ``base_offset``)."""
    return entry.base_offset


def walk_resync(
    buf,
    start: int = 0,
    end: int | None = None,
    *,
    after_offset: int = -1,
    source: str | None = None,
) -> Iterator[Entry | Skipped]:
    """Yield every intact entry of ``buf[start:end]`` in order, and a :class:`Skipped` for each
    unreadable range between them. ``after_offset``: the last offset known to come before
    ``start`` (the previous segment's last, or the segment's base offset - 1); entries found by
    a resync must hold offsets above it and above every entry before them."""
    if isinstance(buf, (memoryview, bytearray)):
        buf = bytes(buf)
    if end is None:
        end = len(buf)
    pos, last = start, after_offset
    while pos < end:
        try:
            for entry in iter_entries(buf, pos, end, validate=True, source=source):
                yield entry
                pos += entry.size
                last = max(last, entry.last_offset)
            return
        except CorruptionError as exc:
            bad = pos if exc.position is None else max(pos, exc.position)
            if exc.kind == ZERO_FILLED_TAIL:
                yield Skipped(bad, end, None, None, exc.kind, exc.message)
                return
            resumed = _resume(buf, bad, end, last)
            if resumed is None:
                yield Skipped(bad, end, last + 1, None, exc.kind, exc.message)
                return
            at, entry, ambiguous = resumed
            upto = first_offset(entry) - 1
            yield Skipped(
                bad,
                at,
                last + 1 if upto > last else None,
                upto if upto > last else None,
                exc.kind,
                exc.message,
                ambiguous,
            )
            pos = at


def _resume(buf, bad: int, end: int, last: int) -> tuple[int, Entry, bool] | None:
    """Where intact entries start again after the damaged entry at ``bad``: (position, the entry
    there, ambiguous), or None when none does before ``end``."""
    claimed = None  # where the damaged entry's size field says it ends
    if end - bad >= LOG_OVERHEAD:
        size = ENTRY_PREFIX.unpack_from(buf, bad)[1]
        if size >= MIN_ENTRY_SIZE and bad + LOG_OVERHEAD + size < end:
            claimed = bad + LOG_OVERHEAD + size
            entry = _intact(buf, claimed, end, last)
            if entry is not None and _chains(buf, entry, end):
                return claimed, entry, False
    pos = bad + 1
    while pos <= end - LOG_OVERHEAD - MIN_ENTRY_SIZE:
        if buf[pos + MAGIC_POS] <= _MAX_MAGIC:
            entry = _intact(buf, pos, end, last)
            if entry is not None and _chains(buf, entry, end):
                return pos, entry, claimed is not None and pos < claimed
        pos += 1
    return None


def _intact(buf, pos: int, end: int, last: int) -> Entry | None:
    """The entry at ``pos`` if it is whole, plausible, CRC-valid and holds offsets above
    ``last``; else None."""
    if end - pos < LOG_OVERHEAD + MIN_ENTRY_SIZE or buf[pos + MAGIC_POS] > _MAX_MAGIC:
        return None
    offset, size = ENTRY_PREFIX.unpack_from(buf, pos)
    if offset <= last or size < MIN_ENTRY_SIZE or size > end - pos - LOG_OVERHEAD:
        return None
    try:
        entry = next(iter_entries(buf, pos, end, validate=True))
    except (CorruptionError, StopIteration):
        return None
    if isinstance(entry, RecordBatch) and (entry.last_offset_delta < 0 or entry.records_count < 0):
        return None
    return entry


def _chains(buf, entry: Entry, end: int) -> bool:
    """Does the data go on intact after ``entry``: the next entry is intact with higher offsets,
    or the entry ends the data (or only zeros follow it)?"""
    nxt = entry.position + entry.size
    if nxt >= end or is_zero(buf, nxt, end):
        return True
    return _intact(buf, nxt, end, entry.last_offset) is not None
