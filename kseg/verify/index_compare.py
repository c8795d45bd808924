"""A segment's `.index` and `.timeindex` compared with what a rebuild from the log writes:
identical, equivalent (other bytes, still valid under Kafka's rules: a second, header-only
walk decides), wrong or missing, with the first difference."""

from __future__ import annotations

from kseg.format import batch as v2
from kseg.format.index_rule import IndexBuilder
from kseg.format.log import MAGIC_POS
from kseg.format.magic import CURRENT_MAGIC as V2_MAGIC
from kseg.format.offset_index import OffsetIndex
from kseg.format.time_index import TimeIndex
from kseg.storage.segment import OFFSET_INDEX, TIME_INDEX, Segment
from kseg.verify.index_check import (
    EMPTIED_MESSAGE,
    EQUIVALENT,
    IDENTICAL,
    MISSING,
    TIME_RULE_EMPTIED,
    WRONG,
    IndexStatus,
    OffsetIndexChecker,
    TimeIndexChecker,
)

_NEVER = 1 << 62


def open_indexes(seg: Segment):
    """The segment's offset and time indexes (None: missing); an index that cannot be read
    raises its OSError (verify reports the file as unreadable)."""
    out = []
    for kind in (OFFSET_INDEX, TIME_INDEX):
        idx = seg.index(kind)
        if idx.error is not None and not idx.missing:
            raise idx.error
        out.append(None if idx.missing else idx)
    return tuple(out)


def index_statuses(
    seg: Segment,
    files,
    builder: IndexBuilder,
    base_offset: int,
    valid_bytes: int,
    max_timestamp: int,
    patches: list,
) -> tuple[IndexStatus, IndexStatus]:
    """The (offset index, time index) statuses of a scanned segment: ``files`` as open_indexes
    gave them, ``builder`` what the scan of its valid prefix (``valid_bytes``) would write;
    ``patches``: the scan's byte patches (a v2 batch whose magic reads 0/1)."""
    ofile, tfile = files
    oidx = ofile.view if ofile is not None else None
    tidx = tfile.view if tfile is not None else None
    o_size, t_size = OffsetIndex.ENTRY_SIZE, TimeIndex.ENTRY_SIZE
    rebuilt_o = len(builder.offset_index) // o_size
    rebuilt_t = len(builder.time_index) // t_size
    same_o = oidx is not None and _same(oidx, builder.offset_index)
    same_t = tidx is not None and _same(tidx, builder.time_index)
    need = (
        oidx if oidx is not None and not same_o else None,
        tidx if tidx is not None and not same_t else None,
    )
    oc, tc = (
        _check_pass(seg, base_offset, valid_bytes, patches, *need)
        if any(v is not None for v in need)
        else (None, None)
    )
    if oidx is None:
        offset_status = IndexStatus(MISSING, 0, rebuilt_o)
    else:
        problem = _sanity(ofile) or (oc.finish(valid_bytes) if oc is not None else None)
        status = WRONG if problem else IDENTICAL if same_o else EQUIVALENT
        diff = problem or (
            None if same_o else _first_diff(oidx.buf, builder.offset_index, o_size, len(oidx))
        )
        rule = oc.rule if oc is not None and status == EQUIVALENT else None
        offset_status = IndexStatus(status, len(oidx), rebuilt_o, oidx.padded_bytes, diff, rule)
    if tidx is None:
        time_status = IndexStatus(MISSING, 0, rebuilt_t)
    else:
        problem = _sanity(tfile) or (
            tc.finish(max_timestamp, preallocated=tidx.padded_bytes > 0) if tc is not None else None
        )
        status = WRONG if problem else IDENTICAL if same_t else EQUIVALENT
        diff = problem or (
            None if same_t else _first_diff(tidx.buf, builder.time_index, t_size, len(tidx))
        )
        rule = tc.rule if tc is not None and status == EQUIVALENT else None
        if rule == TIME_RULE_EMPTIED:
            diff = {"entry": 0, "position": 0, "message": EMPTIED_MESSAGE}
        time_status = IndexStatus(status, len(tidx), rebuilt_t, tidx.padded_bytes, diff, rule)
    return offset_status, time_status


def _check_pass(
    seg: Segment,
    base_offset: int,
    valid_bytes: int,
    patches: list,
    oidx: OffsetIndex | None,
    tidx: TimeIndex | None,
) -> tuple:
    """Second walk, only for indexes whose bytes differ from the rebuild: are they still valid
    under Kafka's rules? Header-only, over the valid prefix; checkers run only when an entry is due."""
    oc = OffsetIndexChecker(oidx) if oidx is not None else None
    tc = TimeIndexChecker(tidx) if tidx is not None else None
    o_due = oc.due if oc is not None else _NEVER
    t_due = tc.due if tc is not None else _NEVER
    prev_last = base_offset - 1
    prefix_max = -1
    flipped = {p.position - MAGIC_POS for p in patches}  # v2 batches with magic 0/1
    with seg.mapped(sequential=True) as buf:
        for pos, _size, magic, _first, last, max_ts, *_ in seg.walk_headers(buf, 0, valid_bytes):
            if magic < V2_MAGIC and pos in flipped:
                b = v2.RecordBatch(buf, pos)
                last, max_ts = b.last_offset, b.max_timestamp
            if pos >= o_due:
                oc.on_batch(pos, last, prev_last)
                o_due = oc.due
            if last >= t_due:
                tc.on_batch(prev_last, last, max_ts, prefix_max)
                t_due = tc.due
            prev_last = last
            if max_ts > prefix_max:
                prefix_max = max_ts
    return oc, tc


def _sanity(idx) -> dict | None:
    exc = idx.problem  # Kafka's sanity check, run once by the Segment
    if exc is None:
        return None
    return {
        "entry": (exc.position or 0) // idx.view.ENTRY_SIZE,
        "position": exc.position,
        "message": exc.message,
    }


def _same(idx, rebuilt) -> bool:
    """Are the index's entries (not its padding) the rebuilt bytes? Compared piece by piece: an
    index read on demand is never held whole."""
    rebuilt = memoryview(rebuilt)
    if len(idx) * idx.ENTRY_SIZE != len(rebuilt):
        return False
    pos = 0
    for piece in idx.pieces():
        if piece != rebuilt[pos : pos + len(piece)]:
            return False
        pos += len(piece)
    return True


def _first_diff(existing, rebuilt: bytes, width: int, n_existing: int) -> dict | None:
    n = max(n_existing, len(rebuilt) // width)
    piece_lo, piece = 0, b""
    step = (1 << 20) // width * width
    for i in range(n):
        if i < n_existing:
            at = i * width
            if not piece_lo <= at < piece_lo + len(piece):  # read the index in pieces
                piece_lo = at
                piece = bytes(existing[at : min(n_existing * width, at + step)])
            a = piece[at - piece_lo : at - piece_lo + width]
        else:
            a = b""
        b = bytes(rebuilt[i * width : (i + 1) * width])
        if a != b:
            return {
                "entry": i,
                "position": i * width,
                "message": "differs from the rebuilt index (still valid for lookups)",
            }
    return None
