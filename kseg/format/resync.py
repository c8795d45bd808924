"""Walking a `.log` past damage: where intact entries start again after a bad region (resync).

Kafka's recovery stops at the first entry it cannot read (log.py's ``iter_entries``) and
truncates there. A resync walk yields the same entries up to that point, then a
:class:`Skipped` naming the unreadable byte range and the offsets it must have held, then the
intact entries after it, and so on to the end.

Where entries resume (``_resume``), in this order:
1. the damaged entry's own size field, if the entry it points to is intact and chains on (a bit
   flip inside a batch leaves its length right: the common case costs one batch);
2. otherwise the first byte position after the damage where an intact entry starts: a plausible
   header (magic 0, 1 or 2; sizes in bounds; offsets above the last good entry's; a v2 batch's
   attributes, last offset delta and count as Kafka writes them, a legacy message's key and
   value lengths filling it: ``plausible``), a matching
   CRC (CRC-32C for v2, CRC-32 for legacy messages), and a chain: the entry after it is intact
   too with rising offsets, or it ends at the end of the data (or where only zeros follow).

Before rule 1, the extent the size field claims is scanned: an intact entry that chains on
inside it is resumed at instead (a size field that lies by whole batches would otherwise lose
them), flagged ambiguous. A candidate's entry must be readable whole (a legacy wrapper whose
inner offsets disagree with its own offset field is refused).

The offsets rule keeps a record value that holds a batch written by a producer (base offset 0)
from being taken for a batch of the log; the chain rule keeps a stray CRC match from starting a
resync. The Skipped says ``ambiguous`` (entries taken, but they may be a damaged entry's
payload: ``_resume``) when the resume lies inside the extent the damaged entry's size field
claims (wherever that ends), or when nothing vouches for it (no extent, the resume past it, or
the damaged entry itself reached through an ambiguous resume) and the entries from it do not
run, header after header, to the end of the data or a zero tail. A zeroed page over a batch's
start (a power loss) followed by intact batches stays a confirmed resync; batches held in a
record value end inside the entry holding them, and are flagged.

This module is the reference (the one source of the rules); faster paths must give the same
events.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from typing import NamedTuple

from kseg.format.batch import (
    ATTR_COMPRESSION,
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    FIELD_POS,
    MIN_BATCH_LENGTH,
)
from kseg.format.entry import ENTRY_PREFIX, LOG_OVERHEAD, MAGIC_POS, SIZE_POS
from kseg.format.errors import ZERO_FILLED_TAIL, CorruptionError
from kseg.format.legacy import KEY_LENGTH_POS, RECORD_OVERHEAD
from kseg.format.log import Entry, is_zero, iter_entries
from kseg.format.magic import MIN_ENTRY_SIZE

_MAX_MAGIC = 2  # a candidate found by scanning must carry a magic Kafka writes
# ... and, for a v2 batch, attributes Kafka writes: the bits Kafka defines (up to 4.1) and a
# codec id it knows (0-4). New with the pre-CRC checks (``plausible``): Kafka's recovery does
# not look at attributes, but no Kafka writes others, and without it a region of random bytes
# leaves ~10^5 plausible v2 headers per GiB whose CRCs cover hundreds of MB each; with it, ~1.
_V2_ATTRIBUTES_KNOWN = (
    ATTR_COMPRESSION | ATTR_TIMESTAMP_TYPE | ATTR_TRANSACTIONAL | ATTR_CONTROL | ATTR_DELETE_HORIZON
)
_MAX_CODEC = 4  # zstd
_V2_ATTRIBUTES_POS = FIELD_POS["attributes"]
assert FIELD_POS["last_offset_delta"] == _V2_ATTRIBUTES_POS + 2
_V2_ATTRS_DELTA = struct.Struct(">hi")
_V2_COUNT_POS = FIELD_POS["records_count"]
_COUNT = struct.Struct(">i")
_SIZE_POS = SIZE_POS
_SMALL = re.compile(rb"[\x00-\x02]")  # a magic byte a candidate may carry (_MAX_MAGIC)
_NONZERO = re.compile(rb"[^\x00]")


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
    scan=None,
    before_offset: int | None = None,
) -> Iterator[Entry | Skipped]:
    """Yield every intact entry of ``buf[start:end]`` in order, and a :class:`Skipped` for each
    unreadable range between them. ``after_offset``: the last offset known to come before
    ``start`` (the previous segment's last, or the segment's base offset - 1); entries found by
    a resync must hold offsets above it and above every entry before them. ``scan``: the byte
    scan's prefilter (:func:`scan_candidates`, the default, or the compiled kernel's the same:
    kseg.storage.kernel_walk.resync_scanner). ``before_offset``: the first offset known to come
    after ``end`` (the next segment's base offset), or None: a range up to the end (a zero-filled
    tail too) must have held the offsets between the last entry's and it."""
    if isinstance(buf, (memoryview, bytearray)):
        buf = bytes(buf)
    if end is None:
        end = len(buf)
    pos, last, doubt = start, after_offset, False
    while pos < end:
        try:
            for entry in iter_entries(buf, pos, end, validate=True, source=source):
                yield entry
                pos += entry.size
                last = max(last, entry.last_offset)
            return
        except CorruptionError as exc:
            skipped, resumed = skip_from(
                buf, exc, pos, end, last, scan=scan, before_offset=before_offset,
                after_ambiguous=doubt,
            )  # fmt: skip
            doubt = skipped.ambiguous
            yield skipped
            if resumed is None:
                return
            pos = resumed


def skip_from(
    buf,
    exc: CorruptionError,
    pos: int,
    end: int,
    last: int,
    *,
    scan=None,
    before_offset: int | None = None,
    after_ambiguous: bool = False,
) -> tuple[Skipped, int | None]:
    """The :class:`Skipped` for the error ``exc`` that a walk from ``pos`` stopped at, and where
    intact entries start again (None: nowhere before ``end``). ``last``: the last offset of the
    entries before the damage (or the offset known to come before ``pos``). ``before_offset``:
    the first offset known to come after ``end`` (the next segment's base offset) or None.
    ``after_ambiguous``: the walk reached ``pos`` through a Skipped flagged ambiguous (the
    damaged entry may be payload: its size field vouches for nothing). What
    walk_resync does at each error, for walks of its own (dump's kernel runs, stats, the Spark
    source)."""
    bad = pos if exc.position is None else max(pos, exc.position)
    # a range up to the end held the offsets up to the next segment's base, when it is known
    upto_end = None if before_offset is None else before_offset - 1
    lost_to_end = (last + 1, upto_end) if upto_end is not None and upto_end > last else None
    if exc.kind == ZERO_FILLED_TAIL:
        first, upto = lost_to_end or (None, None)
        return Skipped(bad, end, first, upto, exc.kind, exc.message), None
    scan = scan or scan_candidates
    if getattr(buf, "ensure", None) is not None:
        # a buffer read on demand (storage.mapped.ShadowMap): scanned window by window, each
        # candidate's own bytes read in only when it is checked (memory: a window, plus the
        # largest candidate entry whose header is plausible)
        scan = _windowed(scan)
    resumed = _resume(buf, bad, end, last, scan, not after_ambiguous)
    if resumed is None:
        upto = None if lost_to_end is None else lost_to_end[1]
        return Skipped(bad, end, last + 1, upto, exc.kind, exc.message), None
    at, entry, ambiguous = resumed
    upto = first_offset(entry) - 1
    held = upto > last
    return (
        Skipped(
            bad,
            at,
            last + 1 if held else None,
            upto if held else None,
            exc.kind,
            exc.message,
            ambiguous,
        ),
        at,
    )


def _resume(
    buf, bad: int, end: int, last: int, scan, trusted: bool = True
) -> tuple[int, Entry, bool] | None:
    """Where intact entries start again after the damaged entry at ``bad``: (position, the entry
    there, ambiguous), or None when none does before ``end``.

    ``ambiguous`` when the resume lies inside the extent the damaged entry's size field claims,
    wherever it ends (it may be that entry's payload: an extent past the end cannot be checked;
    entries chaining on to the end do not vouch either, a tear just after the batches a record
    value holds leaves them so), or when nothing vouches for it (the size field is below the
    minimum, or the resume lies past its extent) and the entries from it do not run, header
    after header, to the end of the data (or a zero tail): batches held in a record value stop
    where the value does (before the rest of the entry holding them); the entries after a
    zeroed page (a power loss) run on to the end. ``trusted``: False when the damaged entry was itself
    reached through an ambiguous resume: its size field then vouches for nothing either."""
    claimed = None  # where the damaged entry's size field says it ends
    if end - bad >= LOG_OVERHEAD:
        if getattr(buf, "ensure", None) is not None:
            buf.ensure(bad, bad + LOG_OVERHEAD)
        size = ENTRY_PREFIX.unpack_from(buf, bad)[1]
        if size >= MIN_ENTRY_SIZE:
            claimed = bad + LOG_OVERHEAD + size
    if claimed is not None and claimed < end:
        entry = _intact(buf, claimed, end, last)
        if entry is not None and _chains(buf, entry, end):
            # ... unless an intact entry that chains on starts inside the extent: the size field
            # may lie (landing on a later entry would lose those between, unflagged), or the
            # entry be the damaged one's payload: resume at the first of them, ambiguous
            inner = _first_chaining(buf, bad + 1, claimed, end, last, scan)
            if inner is not None:
                return inner[0], inner[1], True
            return claimed, entry, not trusted and not _runs_to_end(buf, claimed, end)
    pos = bad + 1
    while True:
        pos = scan(buf, pos, end, last)
        if pos < 0:
            return None
        entry = _intact(buf, pos, end, last)
        if entry is not None and _chains(buf, entry, end):
            if claimed is not None and pos < claimed:
                return pos, entry, True
            return pos, entry, not _runs_to_end(buf, pos, end)
        pos += 1


SCAN_WINDOW = 32 << 20  # a buffer read on demand is scanned in windows of this size
SCAN_MARGIN = 8 << 20  # ... each trusted up to this much before its end (see _windowed)


def _windowed(scan):
    """``scan`` over a buffer read on demand (``ensure``; what lies past its readable end
    ``hi`` reads as zeros), one window at a time: [pos, pos + SCAN_WINDOW) is read in, the
    scan runs to the real end, and its answer is trusted only below ``hi - SCAN_MARGIN``
    (else the next window starts there). Below it a candidate's header (and a legacy message's
    key and value lengths) lies in the read bytes; an entry that reaches past ``hi`` finds
    zeros after it, which the prefilter passes (the checks that follow read its real bytes),
    unless it is over SCAN_MARGIN long and its next header straddles ``hi``: a resync point
    of that size can, rarely, be missed (the entry after it is found). Passed pages are
    released as the window moves (ShadowMap.ensure)."""

    def windowed(buf, pos: int, end: int, last: int) -> int:
        while pos < end:
            hi = buf.ensure(pos, min(end, pos + SCAN_WINDOW))
            trust = end if hi >= end else hi - SCAN_MARGIN
            q = scan(buf, pos, end, last)
            if 0 <= q < trust or trust >= end:
                if q < 0 or _next_holds(buf, q, end, last, hi):
                    return q
                pos = q + 1  # zeros past ``hi`` passed it: the real bytes do not
                continue
            pos = max(pos + 1, trust)
        return -1

    return windowed


def _next_holds(buf, pos: int, end: int, last: int, hi: int) -> bool:
    """For a candidate the windowed scan found: does the entry after it (the end, zeros, or a
    plausible entry) hold in the real bytes? Its header is read in alone when it lies past
    ``hi`` (the scan saw zeros there), so that a large entry is read in whole only if it is
    about to have its CRC checked."""
    last_here = plausible(buf, pos, end, last)
    if last_here is None:
        return False
    nxt = pos + LOG_OVERHEAD + ENTRY_PREFIX.unpack_from(buf, pos)[1]
    if nxt >= end or nxt + _HEADER_SPAN <= hi:
        return True  # the scan read it as it is
    buf.ensure(nxt, min(end, nxt + _HEADER_SPAN))
    return plausible(buf, nxt, end, last_here) is not None or is_zero(buf, nxt, end)


def _first_chaining(buf, start: int, stop: int, end: int, last: int, scan):
    """The first position in [start, stop) where an intact entry starts that chains on, as
    (position, entry), or None."""
    pos = start
    while True:
        pos = scan(buf, pos, end, last)
        if pos < 0 or pos >= stop:
            return None
        entry = _intact(buf, pos, end, last)
        if entry is not None and _chains(buf, entry, end):
            return pos, entry
        pos += 1


_HEADER_SPAN = 1 << 16  # read in for a header check on demand (a legacy key's length too)
_ANY_OFFSET = -(1 << 64)  # below every offset


def _runs_to_end(buf, pos: int, end: int) -> bool:
    """Do entries run from ``pos``, each plausible by its header (no CRC: a flipped bit inside
    a later batch is damage of its own) with rising offsets, one after the other to ``end`` or
    to a zero tail? (Batches held in a record value carry the offsets of the batch holding
    them: where they run on into the real entries after it, the offsets do not rise.)"""
    ensure = getattr(buf, "ensure", None)  # a buffer read on demand
    last = _ANY_OFFSET
    while pos < end:
        if ensure is not None:
            ensure(pos, min(end, pos + _HEADER_SPAN))
        last = plausible(buf, pos, end, last)
        if last is None:
            return is_zero(buf, pos, end)
        pos += LOG_OVERHEAD + ENTRY_PREFIX.unpack_from(buf, pos)[1]
    return pos == end


def scan_candidates(buf, pos: int, end: int, last: int) -> int:
    """The first position at or after ``pos`` where :func:`candidate` holds, or -1: the byte
    scan's prefilter. The compiled kernel has the same (kernel/src/resync.rs;
    kseg.storage.kernel_walk.resync_scanner picks it, and tests/dump/test_resync.py compares the
    two). Here the positions are skipped in C (``re``): to the next magic byte 0-2, and over a
    zero run (every position whose size field lies inside it has size 0: none starts an entry)."""
    stop = end - LOG_OVERHEAD - MIN_ENTRY_SIZE  # the last position scanned
    small, nonzero, size_at = _SMALL.search, _NONZERO.search, _COUNT.unpack_from
    while pos <= stop:
        m = small(buf, pos + MAGIC_POS, stop + MAGIC_POS + 1)
        if m is None:
            return -1
        pos = m.start() - MAGIC_POS
        if size_at(buf, pos + _SIZE_POS)[0] == 0 and pos + 24 <= end:
            m = nonzero(buf, pos + _SIZE_POS, end)
            q = end if m is None else m.start()
            if q >= pos + 24:  # a zero run from the size field on: on to where it ends
                pos = max(pos + 1, q - 11)
                continue
        if candidate(buf, pos, end, last):
            return pos
        pos += 1
    return -1


def candidate(buf, pos: int, end: int, last: int) -> bool:
    """What the scan checks before any CRC: the entry at ``pos`` is plausible (:func:`plausible`)
    and so is what follows it (the end of the data, only zeros, or another plausible entry with
    higher offsets). Every position where :func:`_intact` and :func:`_chains` both hold passes,
    so filtering by it changes no event; it only spares the CRCs."""
    last_here = plausible(buf, pos, end, last)
    if last_here is None:
        return False
    nxt = pos + LOG_OVERHEAD + ENTRY_PREFIX.unpack_from(buf, pos)[1]
    if nxt >= end or plausible(buf, nxt, end, last_here) is not None:
        return True
    # only zeros up to the end: the bytes as they are (a buffer read on demand reads zeros past
    # what it has read in, as the kernel's scan sees them; its window is not moved here)
    return _NONZERO.search(buf, nxt, end) is None


def plausible(buf, pos: int, end: int, last: int) -> int | None:
    """The entry at ``pos`` looks like one Kafka wrote, from its header alone (no CRC): magic 0,
    1 or 2, offset above ``last``, a size inside ``end`` and at least its magic's minimum; for a
    v2 batch attributes Kafka writes (:data:`_V2_ATTRIBUTES_KNOWN`), a last offset delta and a
    record count >= 0; for a legacy message key and value lengths that fill it exactly. Returns
    the entry's last offset as its header says (a legacy message's own offset), or None.

    A real flaw of the first reference, fixed here: it checked a candidate's CRC before anything
    that follows from its header, and in random bytes a quarter of the positive size fields
    point inside the data, so a 1 GiB garbage region cost ~10^5 CRCs over ~hundreds of MB each
    (hours). These checks are the CRC-free part of :func:`_intact` (and of the next entry's,
    for :func:`_chains`), moved first; the attributes rule is new (see its note)."""
    if end - pos < LOG_OVERHEAD + MIN_ENTRY_SIZE:
        return None
    magic = buf[pos + MAGIC_POS]
    if magic > _MAX_MAGIC:
        return None
    offset, size = ENTRY_PREFIX.unpack_from(buf, pos)
    if offset <= last or size < MIN_ENTRY_SIZE or size > end - pos - LOG_OVERHEAD:
        return None
    if magic == 2:
        if size < MIN_BATCH_LENGTH:
            return None
        attributes, delta = _V2_ATTRS_DELTA.unpack_from(buf, pos + _V2_ATTRIBUTES_POS)
        if attributes & ~_V2_ATTRIBUTES_KNOWN or attributes & ATTR_COMPRESSION > _MAX_CODEC:
            return None
        if delta < 0 or _COUNT.unpack_from(buf, pos + _V2_COUNT_POS)[0] < 0:
            return None
        return offset + delta
    if size < RECORD_OVERHEAD[magic]:
        return None
    stop = pos + LOG_OVERHEAD + size
    at = pos + KEY_LENGTH_POS[magic]
    for _ in range(2):  # key, value: the lengths LegacyEntry.key_value checks
        if at + 4 > stop:
            return None
        (n,) = _COUNT.unpack_from(buf, at)
        at += 4
        if n == -1:
            continue
        if n < 0 or at + n > stop:
            return None
        at += n
    return offset if at == stop else None


def _intact(buf, pos: int, end: int, last: int) -> Entry | None:
    """The entry at ``pos`` if it is whole, plausible, CRC-valid and holds offsets above
    ``last``; else None."""
    ensure = getattr(buf, "ensure", None)  # a buffer read on demand: its header read in
    if ensure is not None and pos < end:
        ensure(pos, min(end, pos + _HEADER_SPAN))
    if plausible(buf, pos, end, last) is None:
        return None
    try:  # (reads the entry in whole: its CRC is checked)
        entry = next(iter_entries(buf, pos, end, validate=True))
        first_offset(entry)  # a legacy wrapper's: its inner offsets must agree with its own
    except (CorruptionError, StopIteration):
        return None
    return entry


def _chains(buf, entry: Entry, end: int) -> bool:
    """Does the data go on intact after ``entry``: the next entry is intact with higher offsets,
    or the entry ends the data (or only zeros follow it)?"""
    nxt = entry.position + entry.size
    if nxt >= end or is_zero(buf, nxt, end):
        return True
    return _intact(buf, nxt, end, entry.last_offset) is not None
