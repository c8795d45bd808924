"""The properties a resync walk must keep on a damaged segment, checked against ground truth
(kseg.fixtures.truth: the undamaged bytes and the damage), not against the walk's own rules.

``check(data, entries, damage, after_offset)`` walks ``damage.apply(data)`` with
``walk_resync`` and returns a :class:`Verdict`: ``problems`` (a broken property: a test fails on
any), ``known`` (breaks explained by a weakness of the rules, named in KNOWN, each shown by an
xfail(strict) test in test_resync_properties.py) and ``excused`` (breaks a stated rule
explains). The properties:

1. entries + Skipped ranges tile [0, len) exactly, in order;
2. nothing is invented: a yielded entry is byte-identical to an original entry (anywhere: a
   copy), or an original changed only where no CRC looks (offset; v2 epoch, magic), or one
   whose CRC the damage computed again (LyingCount fix_crc); otherwise it must follow a
   Skipped flagged ambiguous;
3. every intact entry (truth.intact) is yielded at its new position, unchanged;
4. a Skipped range's offsets contain those of every original entry lost inside it (a range
   up to the end: from first_offset up);
5. ambiguous is set exactly when the resume lies inside the damaged entry's claimed extent
   (start + 12 + its size field, when the size field is at least the minimum entry size;
   wherever it ends), or when nothing vouches for the resume (no extent, the resume past it,
   or the damaged entry came after an ambiguous resume) and the entries from the resume do
   not run, header after header, to the end of the data or a zero tail.

The walk is given ``before_offset``: the offset after the segment's last original entry (where
a next segment would start), so a range up to the end reports the offsets it hides.

Excuses, each a rule the module states (counted by the tests, so they stay narrow):

- ``offsets``: an intact entry inside a Skipped whose offset field is not above the last offset
  yielded before it by an original or CRC-blind-damaged entry (a lying baseOffset, a copy of a
  later batch): the offsets rule refuses it. Property 4 likewise for lost entries below it.
- ``after-ambiguous``: the same, where that last offset came from an entry yielded after a
  Skipped flagged ambiguous (the walk said it may be payload); likewise a range bounded by it.
- ``chain``: an intact entry inside a Skipped that the entry after it does not chain on (not
  valid, a magic above 2, a negative count or offset delta, an offset field not above its
  last offset; not the end or zeros): a lone intact entry between two damaged ones.
- ``overlapped``: an intact entry whose first bytes a yielded copy of another entry covers (or
  an entry damaged only where no CRC looks, or whose CRC the damage computed again: a batch
  made longer by a lying length whose CRC was then rewritten over it).
- ``recovered-by-copy``: a lost entry a copy of which was yielded (its offsets are not lost).
- ``bounds-from-a-lie``: a Skipped's offsets bounded by a CRC-blind-damaged entry beside it.
"""

from __future__ import annotations

from typing import NamedTuple

from kseg.fixtures.damage import LyingCount, Two
from kseg.fixtures.truth import OriginalEntry, segment_truth
from kseg.format.batch import RecordBatch
from kseg.format.entry import ENTRY_PREFIX, LOG_OVERHEAD, MAGIC_POS, SIZE_POS
from kseg.format.errors import CorruptionError
from kseg.format.log import is_zero, iter_entries
from kseg.format.magic import MIN_ENTRY_SIZE
from kseg.format.resync import Skipped, plausible, walk_resync

# Weaknesses of the rules these properties find (each shown by an xfail(strict) test):
KNOWN: set[str] = set()


class Verdict(NamedTuple):
    problems: list[str]
    known: set[str]
    excused: set[str]
    events: list


def claimed_end(buf: bytes, start: int) -> int | None:
    """Where the damaged entry at ``start`` ends by its own size field (None: below the
    minimum entry size, or no size field)."""
    if len(buf) - start < LOG_OVERHEAD:
        return None
    size = ENTRY_PREFIX.unpack_from(buf, start)[1]
    return start + LOG_OVERHEAD + size if size >= MIN_ENTRY_SIZE else None


def _chains(buf: bytes, at: int, e: OriginalEntry) -> bool:
    """Does the data go on intact after the entry at ``at``, as the chain rule reads it?"""
    nxt = at + e.size
    if nxt >= len(buf) or is_zero(buf, nxt, len(buf)):
        return True
    if len(buf) - nxt <= MAGIC_POS or buf[nxt + MAGIC_POS] > 2:
        return False
    try:
        after = next(iter_entries(buf, nxt, len(buf), validate=True))
    except (CorruptionError, StopIteration):
        return False
    if isinstance(after, RecordBatch) and (after.records_count < 0 or after.last_offset_delta < 0):
        return False
    return ENTRY_PREFIX.unpack_from(buf, nxt)[0] > e.last_offset


def _runs_to_end(buf: bytes, pos: int) -> bool:
    """Do plausible headers with rising offsets follow each other from ``pos`` to the end (or a
    zero tail)?"""
    n, last = len(buf), -(1 << 64)
    while pos < n:
        last = plausible(buf, pos, n, last)
        if last is None:
            return is_zero(buf, pos, n)
        pos += LOG_OVERHEAD + ENTRY_PREFIX.unpack_from(buf, pos)[1]
    return pos == n


def _same_under_crc(e: OriginalEntry, data: bytes) -> bool:
    """Is ``data`` ``e`` changed only where no CRC looks (offset; v2 epoch and magic)?"""
    return (
        len(data) == e.size
        and data[e.crc_start :] == e.data[e.crc_start :]
        and data[SIZE_POS:LOG_OVERHEAD] == e.data[SIZE_POS:LOG_OVERHEAD]
        and (
            e.crc_start > MAGIC_POS
            or data[LOG_OVERHEAD:MAGIC_POS] == e.data[LOG_OVERHEAD:MAGIC_POS]
        )
    )


def _crc_rewritten(damage, position: int) -> bool:
    """Did ``damage`` compute the CRC of the entry at ``position`` again (LyingCount fix_crc)?
    Whatever that entry holds then passes every check: a writer's bug, not a disk's."""
    parts = (damage.first, damage.second) if isinstance(damage, Two) else (damage,)
    return any(isinstance(p, LyingCount) and p.fix_crc and p.entry == position for p in parts)


def _rewritten_bodies(data: bytes, damage, entries) -> set[bytes]:
    """The bytes of every entry whose CRC ``damage`` computed again, as it rewrote them: a later
    damage may copy one elsewhere (Two(LyingCount fix_crc, CopyBatch)): still the rewrite."""
    parts = (damage.first, damage.second) if isinstance(damage, Two) else (damage,)
    out = set()
    for p in parts:
        if isinstance(p, LyingCount) and p.fix_crc:
            rewritten = p.apply(data)
            out.update(rewritten[e.position : e.end] for e in entries if e.position == p.entry)
    return out


def _kind(damage, entries, by_bytes, rewritten, ev, body: bytes) -> str:
    if body in by_bytes:
        return "original"
    if (
        _crc_rewritten(damage, ev.position)
        or body in rewritten
        or any(_same_under_crc(o, body) for o in entries)
    ):
        return "damaged"
    return "invented"


def check(data: bytes, entries: list[OriginalEntry], damage, after_offset: int) -> Verdict:
    before = max([after_offset] + [e.last_offset for e in entries]) + 1
    truth = segment_truth(data, damage, entries)
    buf = truth.damaged
    n = len(buf)
    problems: list[str] = []
    known: set[str] = set()
    excused: set[str] = set()
    try:
        events = list(walk_resync(buf, after_offset=after_offset, before_offset=before))
    except CorruptionError as exc:
        problems.append(f"walk_resync raised {exc}")
        return Verdict(problems, known, excused, [])

    # 1. entries + Skipped tile [0, n) in order
    pos = 0
    for ev in events:
        if isinstance(ev, Skipped):
            start, end = ev.start, ev.end
        else:
            start, end = ev.position, ev.position + ev.size
        if start != pos or end <= start:
            problems.append(f"tiling: {ev!r} at {start}..{end}, expected to start at {pos}")
        pos = end
    if pos != n:
        problems.append(f"tiling: events end at {pos}, the data at {n}")

    # what each yielded entry is, and what the walk's offsets rule compares against
    by_bytes = {e.data for e in entries}
    rewritten = _rewritten_bodies(data, damage, entries)
    yielded = {}  # position -> entry
    kinds = {}  # position -> original / damaged / invented / invented-unflagged
    last_before = []  # per event: (max last offset yielded before it, the kind that set it)
    last, source = after_offset, "start"
    prev_skip = None
    for ev in events:
        last_before.append((last, source))
        if isinstance(ev, Skipped):
            prev_skip = ev
            continue
        yielded[ev.position] = ev
        kind = _kind(
            damage, entries, by_bytes, rewritten, ev, buf[ev.position : ev.position + ev.size]
        )
        if kind == "invented" and not (prev_skip is not None and prev_skip.ambiguous):
            # 2. nothing invented, unless after a Skipped flagged ambiguous
            kind = "invented-unflagged"
            where = "before any Skipped" if prev_skip is None else f"after {prev_skip!r}"
            problems.append(f"invented: {ev!r} {where}")
        kinds[ev.position] = kind
        if ev.last_offset > last:
            last, source = ev.last_offset, kind

    def offsets_rule(i: int, offset: int) -> bool:
        """Does the offsets rule explain refusing ``offset`` at event ``i``? (Records why.)"""
        top, src = last_before[i]
        if offset > top:
            return False
        if src == "invented":
            excused.add("after-ambiguous")
        else:
            excused.add("offsets")
        return True

    def beside(i: int, kind: str) -> bool:
        """Is the entry just before or just after event ``i`` of ``kind``?"""
        near = [events[j] for j in (i - 1, i + 1) if 0 <= j < len(events)]
        return any(not isinstance(ev, Skipped) and kinds[ev.position] == kind for ev in near)

    # 3. every intact entry is yielded at its new position
    skips = [(i, ev) for i, ev in enumerate(events) if isinstance(ev, Skipped)]
    for e, at in truth.intact:
        y = yielded.get(at)
        if y is not None and y.size == e.size:
            continue
        cover = next(((i, s) for i, s in skips if s.start <= at < s.end), None)
        if cover is None:
            if any(
                p < at < p + y.size and kinds[p] in ("original", "damaged")
                for p, y in yielded.items()
            ):
                excused.add("overlapped")
            else:
                problems.append(
                    f"intact entry at {at} (offset {e.first_offset}): no event holds it"
                )
            continue
        i, s = cover
        claimed = claimed_end(buf, s.start)
        if offsets_rule(i, ENTRY_PREFIX.unpack_from(e.data)[0]):  # legacy: its last offset
            continue
        if not _chains(buf, at, e):
            excused.add("chain")
        else:
            problems.append(f"intact entry at {at} ({e.first_offset}..{e.last_offset}) in {s!r}")

    # 4. a Skipped's offsets contain those of the original entries lost inside it
    copies = {buf[y.position : y.position + y.size] for y in yielded.values()}
    for i, s in skips:
        lo = s.first_offset
        hi = s.last_offset if s.last_offset is not None else 1 << 64
        for e in entries:
            start = damage.moved(e.position)
            y = yielded.get(start)
            if y is not None and y.size == e.size:
                continue
            if start is None:  # cut off by a truncation: lost in the range that ends the data
                inside = s.end == n
            else:
                end = damage.moved(e.end - 1)
                inside = start < s.end and (n if end is None else end + 1) > s.start
            if not inside or (lo is not None and lo <= e.first_offset and e.last_offset <= hi):
                continue
            if e.data in copies:
                excused.add("recovered-by-copy")
            elif offsets_rule(i, e.first_offset):
                pass
            elif beside(i, "damaged"):
                excused.add("bounds-from-a-lie")
            elif beside(i, "invented"):
                excused.add("after-ambiguous")
            else:
                problems.append(
                    f"{s!r} does not hold lost offsets {e.first_offset}..{e.last_offset}"
                )

    # 5. ambiguous exactly when the resume lies inside the claimed extent, or nothing vouches
    # for it (no extent, past it, or the damaged entry itself came after an ambiguous resume)
    # and the entries from it do not run to the end
    doubt = False
    for _, s in skips:
        trusted, doubt = not doubt, s.ambiguous
        if s.end >= n:
            continue
        claimed = claimed_end(buf, s.start)
        inside = claimed is not None and s.end < claimed
        vouched = trusted and claimed is not None and s.end == claimed
        want = inside or (not vouched and not _runs_to_end(buf, s.end))
        if want != s.ambiguous:
            problems.append(
                f"{s!r}: ambiguous {s.ambiguous}, though its claimed extent ends at {claimed}"
            )
    return Verdict(problems, known, excused, events)
