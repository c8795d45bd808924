"""Which bytes of a partition's segments salvage keeps: every intact entry, in offset order.

Each segment is walked with the resync walk (kseg.format.resync.walk_resync: the one source of
the rules for where intact entries start again after damage), ``after_offset`` chained from the
previous segment's last good offset (or the segment's base offset - 1). On top of it, the
partition's offsets must rise: an entry whose offsets go back is blamed as verify blames it
(kseg.verify.liar: baseOffset lies outside the CRC, so the batch that does not fit between two
neighbours that agree is the liar) and, when those neighbours leave exactly its offset count
between them, its offset field is edited back in place (a v2 batch's baseOffset, or an
uncompressed legacy message's offset: a compressed wrapper's inner offsets would disagree);
otherwise it is dropped and counted as lost. Entries below the log start offset found after damage stay out.

The input is a list of segment sources: the live segments, then (kseg.salvage.leftovers) the
`.log` bytes an earlier repair or salvage quarantined and Kafka's `.log.deleted` leftovers
(``origin``). Offsets rise across all of them: an entry of a leftover whose offsets were
already taken (by the live log, or by an earlier source) is left out and reported as an
``overlap`` (not lost: its offsets are kept from elsewhere).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from kseg.format.batch import RecordBatch
from kseg.format.errors import ZERO_FILLED_TAIL
from kseg.format.resync import Skipped, walk_resync
from kseg.verify.findings import Patch

BAD_OFFSETS = "offsets_not_increasing"
BELOW_LOG_START = "below_log_start"
OVERLAP = "overlap"  # offsets already kept from the live log or an earlier source
LIVE, QUARANTINE, DELETED = "live", "quarantine", "deleted"  # a source's origin
AMBIGUOUS = "ambiguous_resync"
AMBIGUOUS_WHY = (
    "reached through an ambiguous resync (they may be the damaged entry's payload): left out "
    "(--keep-ambiguous writes them)"
)


class SegmentSource(NamedTuple):
    """A segment to salvage from: ``path`` is read, ``name`` is the `.log` name it is written
    back under; ``patches`` are verify's proven in-place fixes (bytes outside the CRC)."""

    path: Path
    name: str
    base_offset: int
    patches: tuple[Patch, ...] = ()
    origin: str = LIVE  # LIVE, QUARANTINE (an earlier run's quarantined bytes), DELETED


# A byte range salvage does not keep, the offsets it held at most (None: unknown) and why: the
# resync walk's Skipped itself, with salvage's own kinds too (overlap, ambiguous_resync, ...)
Lost = Skipped


class Edit(NamedTuple):
    """Bytes outside the CRC written back in place (a magic byte, a leader epoch, a baseOffset)."""

    position: int
    old: bytes
    new: bytes
    reason: str


class SegmentSalvage(NamedTuple):
    """What salvage keeps of one segment."""

    source: SegmentSource
    size: int
    keep: list[tuple[int, int]]  # [start, end) byte ranges kept, in order
    lost: list[Lost]
    edits: list[Edit]
    records: int  # records kept
    last_offset: int | None  # of the last entry kept
    kafka_records: int  # records of intact entries Kafka's recovery keeps
    below_start: int  # bytes of entries below the log start offset left out
    first_offset: int | None = None  # of the first entry kept

    @property
    def kept_bytes(self) -> int:
        return sum(e - s for s, e in self.keep)

    @property
    def rewritten(self) -> bool:
        """Bytes go: the segment is rewritten without them."""
        return self.keep != ([(0, self.size)] if self.size else [])

    @property
    def changed(self) -> bool:
        return self.rewritten or bool(self.edits)

    @property
    def put_back_name(self) -> str | None:
        """A leftover's kept entries go back as a new segment named by its first offset."""
        if self.source.origin == LIVE or self.first_offset is None:
            return None
        return f"{self.first_offset:020d}.log"

    @property
    def ambiguous(self) -> bool:
        return any(x.ambiguous for x in self.lost)


class _Entry(NamedTuple):
    seg: int
    position: int
    size: int
    first: int
    last: int
    records: int
    fixable: bool  # its offsets are its offset field's alone (v2, or a plain legacy message)
    head: bytes  # its first 8 bytes (its offset field), as read: the buffer lets go of them


def _entry(seg: int, e, buf) -> _Entry:
    head = bytes(buf[e.position : e.position + 8])
    if isinstance(e, RecordBatch):
        return _Entry(seg, e.position, e.size, e.base_offset, e.last_offset, e.records_count,
                      True, head)  # fmt: skip
    first = e.base_offset
    plain = e.compression_id == 0 and first == e.last_offset
    return _Entry(seg, e.position, e.size, first, e.last_offset, e.last_offset - first + 1, plain,
                  head)  # fmt: skip


def _patched(buf, patches) -> bytes:
    data = bytearray(buf)
    for p in patches:
        data[p.position : p.position + len(p.new)] = p.new
    return bytes(data)


def _items(sources: list[SegmentSource]) -> Iterator[tuple[int, object, object]]:
    """(segment index, Entry or Skipped or None at the segment's end, its buffer)."""
    from kseg.storage.mapped import open_mapped, read_file

    after = -1
    for i, src in enumerate(sources):
        # read on demand (memory bounded by a window), or whole with verify's proven in-place
        # fixes applied to a copy
        patches = src.patches
        buf = _patched(read_file(src.path), patches) if patches else open_mapped(src.path)
        after = max(after, src.base_offset - 1)
        # the next segment's base: a range lost up to the end held the offsets below it
        before = sources[i + 1].base_offset if i + 1 < len(sources) else None
        walk = walk_resync(buf, after_offset=after, source=str(src.path), before_offset=before)
        for item in walk:
            if not isinstance(item, Skipped):
                after = max(after, item.last_offset)
            yield i, item, buf
        yield i, None, buf


def salvage_walk(
    sources: list[SegmentSource],
    *,
    log_start_offset: int | None = None,
    kafka_limits: list[int] | None = None,
    keep_ambiguous: bool = False,
) -> list[SegmentSalvage]:
    """What salvage keeps of each source (in the order given: by base offset).
    ``kafka_limits``: per source, the byte Kafka's recovery keeps it up to (kseg.salvage.kafka);
    the intact records below it are counted as what Kafka keeps. The entries reached through a
    resync flagged ambiguous (up to the next resync that is not) are left out and counted lost
    (a ``Lost`` of kind AMBIGUOUS, ``ambiguous`` set), unless ``keep_ambiguous``."""
    n = len(sources)
    keep: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    lost: list[list[Lost]] = [[] for _ in range(n)]
    edits: list[list[Edit]] = [[] for _ in range(n)]
    records = [0] * n
    kafka = [0] * n
    below = [0] * n
    lasts: list[int | None] = [None] * n
    firsts: list[int | None] = [None] * n
    sizes = [0] * n
    state = {"damaged": False, "doubt": False}

    def commit(e: _Entry) -> None:
        if state["damaged"] and log_start_offset is not None and e.last < log_start_offset:
            below[e.seg] += e.size
            return
        ranges = keep[e.seg]
        if ranges and ranges[-1][1] == e.position:
            ranges[-1] = (ranges[-1][0], e.position + e.size)
        else:
            ranges.append((e.position, e.position + e.size))
        records[e.seg] += e.records
        lasts[e.seg] = e.last
        if firsts[e.seg] is None:
            firsts[e.seg] = e.first

    def drop(e: _Entry, why: str) -> None:
        state["damaged"] = True
        lost[e.seg].append(Lost(e.position, e.position + e.size, e.first, e.last, BAD_OFFSETS, why))

    def fix(e: _Entry, base: int, why: str) -> _Entry:
        old = e.head
        new = base.to_bytes(8, "big", signed=True)
        edits[e.seg].append(Edit(e.position, old, new, why))
        return e._replace(first=base, last=base + (e.last - e.first))

    before = -1  # the last offset before the pending entry
    pending: _Entry | None = None  # the last entry taken, not yet committed (it may be a liar)
    suspect: _Entry | None = None  # an entry that goes back below the pending one's offsets

    def take(e: _Entry) -> None:
        nonlocal before, pending, suspect
        if suspect is not None:  # e is the entry after the suspect: it decides
            s, suspect = suspect, None
            gap = e.first - pending.last - 1
            if s.fixable and e.first > pending.last and gap == s.last - s.first + 1:
                why = (
                    f"offset {s.first} (outside the CRC) is wrong: offsets {pending.last} "
                    f"and {e.first} around it leave exactly its {gap} offsets"
                )
                commit(pending)
                before, pending = pending.last, fix(s, pending.last + 1, why)
            else:
                drop(s, f"offsets {s.first}..{s.last} go back below {pending.last}, unproven")
        if pending is None:
            if e.first > before:
                pending = e
            else:
                drop(e, f"offsets {e.first}..{e.last} go back below {before}")
            return
        if e.first > pending.last:
            commit(pending)
            before, pending = pending.last, e
            return
        a = pending
        if e.first > before:  # e follows a's predecessor: a's baseOffset was raised
            gap = e.first - before - 1
            if a.fixable and gap == a.last - a.first + 1:
                why = (
                    f"offset {a.first} (outside the CRC) is wrong: offsets {before} and "
                    f"{e.first} around it leave exactly its {gap} offsets"
                )
                a = fix(a, before + 1, why)
                commit(a)
                before = a.last
            else:
                drop(a, f"offsets {a.first}..{a.last} do not fit before {e.first}, unproven")
            pending = e
            return
        suspect = e

    def flush() -> None:
        nonlocal pending, suspect, before
        if suspect is not None:
            drop(suspect, f"offsets {suspect.first}..{suspect.last} go back, unproven")
            suspect = None
        if pending is not None:
            commit(pending)
            before, pending = pending.last, None

    def overlap(e: _Entry) -> None:
        ls = lost[e.seg]
        end = e.position + e.size
        if ls and ls[-1].kind == OVERLAP and ls[-1].end == e.position:
            ls[-1] = ls[-1]._replace(end=end, last_offset=max(ls[-1].last_offset, e.last))
        else:
            why = "offsets already kept from the live log or an earlier source"
            ls.append(Lost(e.position, end, e.first, e.last, OVERLAP, why))

    def left_out(e: _Entry) -> None:
        ls = lost[e.seg]
        if ls and ls[-1].kind == AMBIGUOUS and ls[-1].end == e.position:
            ls[-1] = ls[-1]._replace(end=e.position + e.size, last_offset=e.last)
        else:
            ls.append(Lost(e.position, e.position + e.size, e.first, e.last, AMBIGUOUS,
                           AMBIGUOUS_WHY, True))  # fmt: skip

    for i, item, buf in _items(sources):
        if item is None:
            sizes[i] = len(buf)
            state["doubt"] = False  # the next segment's walk starts afresh
            continue
        if isinstance(item, Skipped):
            flush()
            if item.kind != ZERO_FILLED_TAIL:
                state["damaged"] = True
            state["doubt"] = item.ambiguous and not keep_ambiguous
            lost[i].append(Lost(*item))
            continue
        e = _entry(i, item, buf)
        if sources[i].origin != LIVE:
            top = before if pending is None else pending.last
            if e.first <= top:  # the live log, then the earlier source, wins
                overlap(e)
                continue
        # what Kafka keeps does not depend on what salvage keeps (--keep-ambiguous)
        if kafka_limits is not None and e.position + e.size <= kafka_limits[i]:
            kafka[i] += e.records
        if state["doubt"]:
            left_out(e)
            continue
        take(e)
    flush()
    out = []
    for i, src in enumerate(sources):
        ls = sorted(lost[i])
        if ls and ls[-1].last_offset is None and ls[-1].first_offset is not None and i + 1 < n:
            nxt = sources[i + 1].base_offset - 1  # a tail lost up to the next segment
            if nxt >= ls[-1].first_offset:
                ls[-1] = ls[-1]._replace(last_offset=nxt)
        if below[i]:
            why = f"entries below the log start offset {log_start_offset} found after damage"
            ls.append(Lost(0, 0, None, None, BELOW_LOG_START, why))
        ed = sorted(edits[i]) + [
            Edit(p.position, p.old, p.new, p.reason)
            for p in src.patches
            if any(s <= p.position < e for s, e in keep[i])
        ]
        out.append(
            SegmentSalvage(
                src,
                sizes[i],
                keep[i],
                ls,
                sorted(ed),
                records[i],
                lasts[i],
                kafka[i],
                below[i],
                firsts[i],
            )  # fmt: skip
        )
    return out
