"""Which entries, records and index entries a dump shows: --from/--to-offset, --from/--to-time,
--max-bytes and --limit, each rule once (the .log loops, the kernel runs and the index dumps
all ask here)."""

from __future__ import annotations

from kseg.dump.options import DumpOptions
from kseg.format.batch import RecordBatch
from kseg.format.magic import format_of


class Budget:
    """Counts what --limit limits (records, or batches with --batches-only)."""

    def __init__(self, limit: int | None) -> None:
        self.left = limit

    def take(self) -> bool:
        if self.left is None:
            return True
        if self.left <= 0:
            return False
        self.left -= 1
        return True

    @property
    def spent(self) -> bool:
        return self.left is not None and self.left <= 0


class Span:
    """The offsets the selection printed from one segment's log: with a time window, that
    segment's index files show only entries inside it."""

    __slots__ = ("lo", "hi")

    def __init__(self) -> None:
        self.lo: int | None = None
        self.hi: int | None = None

    def add(self, lo: int, hi: int) -> None:
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)


_NOTHING = (1, 0)  # an empty offset range


def offset_range(opts: DumpOptions, span: Span | None) -> tuple[int, int] | None:
    """The offsets an index, time index or txn index entry must fall in, or None (no selector).
    --from/--to-offset bound it; --from/--to-time narrow it to what the window chose from the
    segment's log (when the log was dumped in the same run)."""
    timed = opts.from_time is not None or opts.to_time is not None
    if opts.from_offset is None and opts.to_offset is None and not (timed and span):
        return None
    lo = -(1 << 63) if opts.from_offset is None else opts.from_offset
    hi = (1 << 63) - 1 if opts.to_offset is None else opts.to_offset
    if timed and span is not None:
        if span.lo is None:
            return _NOTHING
        lo, hi = max(lo, span.lo), min(hi, span.hi)
    return (lo, hi)


def in_times(ts: int, opts: DumpOptions) -> bool:
    return (opts.from_time is None or ts >= opts.from_time) and (
        opts.to_time is None or ts <= opts.to_time
    )


def selecting(opts: DumpOptions) -> bool:
    return (
        opts.record_filter is not None
        or opts.from_offset is not None
        or opts.to_offset is not None
        or opts.from_time is not None
        or opts.to_time is not None
    )


END = None  # show_entry: nothing from here on is shown
LAST = "last"  # show_entry: show this entry, then nothing more


def show_entry(entry, opts: DumpOptions, limit_end: int) -> bool | str | None:
    """Does a .log dump show this entry (True), skip it (False), end the file here (END), or
    show it and end the file after it (LAST)?"""
    if entry.position + entry.size > limit_end:
        return END  # --max-bytes: only whole batches within the first N bytes
    last = False
    if opts.to_offset is not None:
        if isinstance(entry, RecordBatch) or not entry.is_compressed:
            if entry.base_offset > opts.to_offset:  # a legacy message's offset is exact
                return END
        elif entry.last_offset > opts.to_offset:
            # a legacy wrapper's offset is its last inner one; its first is known only once
            # decompressed and may be selected (the records are filtered one by one). Every
            # later entry starts past the wrapper's last offset: the file ends after it.
            last = True
    if opts.from_offset is not None and entry.last_offset < opts.from_offset:
        return END if last else False
    if (
        opts.from_time is not None
        and entry.max_timestamp < opts.from_time
        and format_of(entry.magic).timestamps
    ):
        return END if last else False
    return LAST if last else True
