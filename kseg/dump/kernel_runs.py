"""A .log's loop with the compiled kernel taking runs of plain batches (kseg.kernel): their
JSON lines whole (``-f json``), or their headers walked and CRC-checked for a record search.
Every entry the kernel leaves goes through the core's loop body (kseg.dump.batch_events), one
entry, so the output is the core's, byte for byte."""

from __future__ import annotations

from collections.abc import Iterator

from kseg.dump import kernel_json
from kseg.dump.batch_events import entry_events, shown_entry_events
from kseg.dump.kernel_records import MAX_LEFT
from kseg.dump.options import DumpOptions
from kseg.dump.selection import Budget, Span, selecting
from kseg.format.batch import HEADER_SIZE, RecordBatch
from kseg.format.log import iter_entries
from kseg.storage import kernel_walk


class RunChunk(list):
    """A chunk of ready lines the kernel rendered from a run of batches starting at byte
    ``position`` of the file (dump_progress moves its bar by it)."""

    __slots__ = ("position",)


class _KernelWindows:
    """How far a kernel loop may walk from ``pos``: the run window, clamped to what a buffer read
    on demand (storage.mapped.ShadowMap) holds, after letting go of the pages passed. A file that
    shrank gives ``pos`` itself: the core then reads on and says where, as it would."""

    def __init__(self, buf, start: int, limit_end: int) -> None:
        from kseg.format.log import _Behind

        self.ensure = getattr(buf, "ensure", None)
        self.behind = _Behind(buf, start)
        self.limit_end = limit_end

    def end_from(self, pos: int) -> int:
        behind = self.behind
        if pos >= behind.next:
            behind.passed(pos)
        window = min(self.limit_end, pos + kernel_json.RUN_WINDOW)
        if self.ensure is not None:
            try:
                window = min(window, self.ensure(pos, min(window, pos + kernel_json.READ_WINDOW)))
            except OSError:
                window = pos
        return window


def kernel_runs(
    buf,
    start: int,
    end: int,
    limit_end: int,
    name: str,
    opts: DumpOptions,
    budget: Budget,
    make_event,
    span: Span,
    lines,
    runs,
    tags: dict,
) -> Iterator[list]:
    """dump_log's loop with the kernel taking runs of plain batches (kseg._kernel.JsonRecords
    ``run``: their batch and record lines, the same bytes, selection and --limit), a window of
    the file per call, in parts of at most about kernel_json.JSON_PART bytes (a run's part stops
    after half of it; a batch with more than half of it in record lines: the core's path).
    Every entry the kernel leaves (legacy, control, compressed, a bad CRC, any problem, a torn
    or zero-filled tail, past --max-bytes or --to-offset, a record line longer than the kernel
    renders, a run it had no memory for) goes through the core's loop body,
    one entry, and the kernel carries on after it. A CorruptionError propagates as from
    iter_entries. ``runs``: the JsonRecords whose ``run`` takes the runs (``lines`` itself, or
    with --batches-only one for the batch lines alone, ``lines`` None); both come from
    ``opts.json_lines``."""
    batch_file, batch_tail = opts.json_lines.batch_fields(name, tags)
    batches_only = opts.batches_only
    filtered = batches_only or selecting(opts)  # --batches-only: span has every batch shown
    windows = _KernelWindows(buf, start, limit_end)
    run = runs.run
    committed = None if opts.committed is None else _Committed(buf, opts.committed)
    pos = start
    while pos < end:
        window = windows.end_from(pos)
        if committed is not None and window > pos:
            # read_committed: a run stops before the first batch left out, which is passed over
            window, skip = committed.cut(pos, window)
            if skip:
                pos += skip
                continue
        got = None
        if window > pos:
            left = budget.left
            try:
                got = run(
                    buf, pos, window, batch_file, batch_tail,
                    None if left is None else min(left, MAX_LEFT),
                    max(1, kernel_json.JSON_PART // 2), batches_only,
                )  # fmt: skip
            except MemoryError:
                pass  # the kernel found no room for its part: the core takes the entry here
        if got is not None:
            text, stop, reason, emitted, lo, hi = got
            if left is not None:
                budget.left = left - emitted
            if emitted and filtered:
                span.add(lo, hi)
            if text:
                chunk = RunChunk((text,))
                chunk.position = pos
                yield chunk
            pos = stop
            if reason == kernel_json.RUN_LIMIT:
                return
            if reason != kernel_json.RUN_OTHER:
                continue  # the part is full, or the window done: on from where it stopped
        # the core's loop body for the one entry here (an empty window: one past --max-bytes,
        # or a file that shrank while read; or the kernel out of memory)
        entry = next(iter_entries(buf, pos, end, source=name, validate=opts.resync), None)
        if entry is None:
            return
        if committed is not None and not opts.committed.keeps_entry(entry):
            pos += entry.size
            continue
        if (yield from shown_entry_events(
            entry, name, opts, limit_end, budget, make_event, span, lines
        )):  # fmt: skip
            return
        pos += entry.size


class _Committed:
    """read_committed in kernel_runs: the kernel's header walk (kseg.storage.kernel_walk) says
    which of the plain batches ahead a read_committed consumer gets (kseg.storage.isolation);
    its rows are kept until the runs have passed them, so each batch is walked once more."""

    def __init__(self, buf, committed) -> None:
        self.buf = buf
        self.committed = committed
        self.rows: list[tuple[int, int, bool]] = []  # (position, size, kept), from self.i on
        self.i = 0
        self.walked = -1  # where the walk stopped (the rows cover [rows[i] position, walked))

    def cut(self, pos: int, window: int) -> tuple[int, int]:
        """(the window a run from ``pos`` may take, bytes to pass over at ``pos``): a run ends
        before the first batch left out; that batch at ``pos`` itself is passed over; where the
        walk found no plain batch (the core's entry) the window is ``pos``."""
        rows, i = self.rows, self.i
        while i < len(rows) and rows[i][0] < pos:
            i += 1
        if i >= len(rows) or rows[i][0] != pos:
            keeps = self.committed.keeps
            found, self.walked, _other = kernel_walk.walk_window(self.buf, pos, window)
            rows = self.rows = [
                (bpos, size, keeps(pid, last, attrs))
                for bpos, size, _m, _b, last, _t, _n, attrs, pid, _ok, _ple in (
                    kernel_walk.ROW.iter_unpack(found)
                )
            ]
            i = 0
        self.i = i
        if i >= len(rows):
            return pos, 0
        if not rows[i][2]:
            return window, rows[i][1]
        for j in range(i + 1, len(rows)):
            if not rows[j][2]:
                return min(window, rows[j][0]), 0
        return min(window, self.walked), 0


def search_runs(
    buf, start: int, end: int, limit_end: int, name: str, opts: DumpOptions, budget, make_event
) -> Iterator[list]:
    """dump_log's loop for a record search with the kernel active: the kernel walks and
    CRC-checks the plain valid v2 batches (kseg.storage.kernel_walk.walk_window); of those, a control batch
    (never matches) or an uncompressed one whose record bytes fail the filter's pre-check is
    passed over without a Python object, every other one goes through the core's loop body
    (entry_events), exactly as without the kernel. Every entry the kernel leaves (legacy, a
    bad CRC or magic, a torn or zero-filled tail, past --max-bytes) goes through the core's
    loop body, one entry, and the kernel carries on after it."""
    from kseg.format.batch import ATTR_COMPRESSION, ATTR_CONTROL

    may_match = opts.record_filter.may_match
    committed = opts.committed  # read_committed (kseg.storage.isolation): None, every batch
    from_offset, to_offset, from_time = opts.from_offset, opts.to_offset, opts.from_time
    unpack = kernel_walk.ROW.iter_unpack
    windows = _KernelWindows(buf, start, limit_end)
    pos = start
    while pos < end:
        window = windows.end_from(pos)
        other = True
        if window > pos:
            rows, stop, other = kernel_walk.walk_window(buf, pos, window)
            for bpos, size, _m, base, last, max_ts, _n, attrs, pid, _ok, _ple in unpack(rows):
                # show_entry for a valid v2 batch, then the pre-check; magic and CRC are the
                # kernel's
                if to_offset is not None and base > to_offset:
                    return
                if (from_offset is not None and last < from_offset) or (
                    from_time is not None and max_ts < from_time
                ):
                    continue
                if committed is not None and not committed.keeps(pid, last, attrs):
                    continue
                if attrs & ATTR_CONTROL or not (
                    attrs & ATTR_COMPRESSION or may_match(buf, bpos + HEADER_SIZE, bpos + size)
                ):
                    continue
                entry = RecordBatch(buf, bpos, name)
                yield from entry_events(entry, name, opts, budget, make_event)
                if budget.spent:
                    return
            if stop > pos and not other:
                pos = stop
                continue  # the window is done: on from where it stopped
            pos = stop
        # the core's loop body for the one entry here
        entry = next(iter_entries(buf, pos, end, source=name, validate=opts.resync), None)
        if entry is None:
            return
        if committed is not None and not committed.keeps_entry(entry):
            pos += entry.size
            continue
        if (yield from shown_entry_events(entry, name, opts, limit_end, budget, make_event)):
            return
        pos += entry.size
