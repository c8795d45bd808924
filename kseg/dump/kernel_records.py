"""One v2 batch's records as the compiled kernel's JSON lines (kseg.dump.kernel_json.json_records'
``render``), with the same selection and --limit as the core's record loop
(kseg.dump.batch_events); anything the kernel declines goes back to that loop."""

from __future__ import annotations

from kseg.dump import kernel_json
from kseg.dump.options import DumpOptions
from kseg.dump.selection import Budget, Span, selecting
from kseg.format import compression as codecs
from kseg.format.batch import ATTR_TIMESTAMP_TYPE, HEADER_SIZE, RecordBatch
from kseg.format.compression import NONE
from kseg.format.errors import CorruptionError

MAX_LEFT = 1 << 62  # a --limit beyond any segment's records


def kernel_records(
    entry: RecordBatch,
    lines,
    out: list,
    opts: DumpOptions,
    budget: Budget,
    span: Span | None,
    pending: bool,
):
    """The batch's records as the kernel's JSON lines (parts of about kernel_json.JSON_PART bytes:
    whole lines, but a line longer than the kernel writes whole goes out a part at a
    time, so memory stays bounded whatever a record holds), with ``out`` (the batch and its problems) before them; the same events, bytes and
    selection as the core's loop in entry_events. Returns False, having yielded nothing, when
    the core must take the batch: its bytes are no longer in the window, it does not
    decompress, any record is not valid (the kernel checks all of them before the first
    line goes out, so the core reports the problem exactly as it would have), or the kernel
    had no room for the first part (a MemoryError later on is kseg's out-of-memory line)."""
    buf, base, size = entry.buf, entry.position, entry.size
    covers = getattr(buf, "covers", None)  # a buffer read on demand (storage.mapped)
    if covers is not None and not covers(base, base + size):
        return False
    cid = entry.compression_id
    if cid == NONE:
        data, start, end = buf, base + HEADER_SIZE, base + size
    else:
        try:  # the core's bounded codecs; a failure is the core's to report
            with memoryview(buf) as mv:
                data = codecs.decompress(
                    cid, mv[base + HEADER_SIZE : base + size], opts.max_decompressed
                )
        except CorruptionError:
            return False
        start, end = 0, len(data)
    log_append_time = entry.max_timestamp if entry.attributes & ATTR_TIMESTAMP_TYPE else None
    filtered = span is not None and selecting(opts)
    done, validated, step, hpos = 0, False, 0, 0
    while start >= 0:
        left = budget.left
        try:
            got = lines.render(
                data, start, end, entry.records_count, entry.base_offset, entry.base_timestamp,
                log_append_time, entry.base_sequence, done, validated,
                None if left is None else min(left, MAX_LEFT), kernel_json.JSON_PART, step, hpos,
            )  # fmt: skip
        except MemoryError:
            if validated:  # lines of the batch are out: the core could not take it over
                raise
            return False  # the kernel found no room: the core takes the batch, as without it
        if got is None:
            if validated:  # cannot happen: the bytes were checked and do not change
                raise AssertionError(f"{entry.source}: batch at byte {base} changed while read")
            return False
        text, start, done, emitted, lo, hi, step, hpos = got  # step > 0: a line goes on
        validated = True
        if left is not None:
            budget.left = left - emitted
        if emitted:
            pending = False
            if filtered:
                span.add(lo, hi)
        if text:  # (the rest of a long line has no record of its own)
            out.append(text)
        if not pending and out:
            yield out
            out = []
    return True
