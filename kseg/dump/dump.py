"""`kseg dump`: every file of a data directory as a stream of typed events (plain dicts).

The events are the interface: JSON Lines emits them as they are, text and table render them.
Problems in the input become ``{"type": "error"}`` events and decoding continues where it
safely can. Nothing here opens a file for writing.
"""

from __future__ import annotations

from binascii import b2a_base64
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson

from kseg import kernel
from kseg.dump import payload as P
from kseg.format import checkpoint as cp
from kseg.format import compression as codecs
from kseg.format import txn_index as tx
from kseg.format.batch import ATTR_TIMESTAMP_TYPE, HEADER_SIZE, RecordBatch
from kseg.format.compression import DEFAULT_MAX_DECOMPRESSED, NONE
from kseg.format.control import KRAFT_CONTROL_NAMES, parse_control
from kseg.format.errors import CorruptionError
from kseg.format.log import bad_magic_message, iter_entries, v2_crc_matches
from kseg.format.magic import CURRENT_MAGIC as V2_MAGIC
from kseg.format.magic import format_of
from kseg.format.value_class import FrozenValue, init
from kseg.outcome import BadOption
from kseg.storage import files as F
from kseg.storage import tree
from kseg.storage.mapped import mapped, read_file
from kseg.storage.segment import OFFSET_INDEX, TIME_INDEX, Segment

UNREADABLE = "unreadable"
BAD_MAGIC = "bad_magic"
USAGE = "usage"


def search_options(key, value, header, key_eq, value_contains, format_string):
    """(record filter or None, compiled --format-string or None) from dump's search options;
    their modules are imported only when one is given (dump's start-up stays as it was)."""
    record_filter = parts = None
    if key or value or header or key_eq or value_contains:
        from kseg.dump.search import record_filter as make_filter

        record_filter = make_filter(key, value, header, key_eq, value_contains)
    if format_string is not None:
        from kseg.dump.format_string import compile_format

        parts = tuple(compile_format(format_string))
    return record_filter, parts


class DumpOptions(FrozenValue):
    batches_only: bool
    payload: str
    from_offset: int | None
    to_offset: int | None
    from_time: int | None
    to_time: int | None
    limit: int | None
    max_bytes: int | None
    topic: str | None
    partition: int | None
    decoder: str | None  # a name in internal_topics.DECODERS, or "none"; None = by topic
    skip_record_metadata: bool  # records as offset + decoded payload only, no batches
    max_decompressed: int
    # internal: the consumer writes JSON Lines, so record events may arrive as ready lines (bytes)
    json_lines: bool
    # record search (kseg.dump.search.RecordFilter): only records it keeps, and their batches
    record_filter: object
    # only the number of (matching) records per partition and a total (see dump_chunks)
    count: bool
    # records only, as bytes in this format (kseg.dump.format_string.compile_format's parts)
    format_string: tuple | None

    __slots__ = (
        "batches_only",
        "payload",
        "from_offset",
        "to_offset",
        "from_time",
        "to_time",
        "limit",
        "max_bytes",
        "topic",
        "partition",
        "decoder",
        "skip_record_metadata",
        "max_decompressed",
        "json_lines",
        "record_filter",
        "count",
        "format_string",
    )

    def __init__(
        self,
        batches_only: bool = False,
        payload: str = "auto",
        from_offset: int | None = None,
        to_offset: int | None = None,
        from_time: int | None = None,
        to_time: int | None = None,
        limit: int | None = None,
        max_bytes: int | None = None,
        topic: str | None = None,
        partition: int | None = None,
        decoder: str | None = None,
        skip_record_metadata: bool = False,
        max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
        json_lines: bool = False,
        record_filter: object = None,
        count: bool = False,
        format_string: tuple | None = None,
    ) -> None:
        init(self, "batches_only", batches_only)
        init(self, "payload", payload)
        init(self, "from_offset", from_offset)
        init(self, "to_offset", to_offset)
        init(self, "from_time", from_time)
        init(self, "to_time", to_time)
        init(self, "limit", limit)
        init(self, "max_bytes", max_bytes)
        init(self, "topic", topic)
        init(self, "partition", partition)
        init(self, "decoder", decoder)
        init(self, "skip_record_metadata", skip_record_metadata)
        init(self, "max_decompressed", max_decompressed)
        init(self, "json_lines", json_lines)
        init(self, "record_filter", record_filter)
        init(self, "count", count)
        init(self, "format_string", format_string)


class _Budget:
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


class _Span:
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


def _offset_range(opts: DumpOptions, span: _Span | None) -> tuple[int, int] | None:
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


def _in_times(ts: int, opts: DumpOptions) -> bool:
    return (opts.from_time is None or ts >= opts.from_time) and (
        opts.to_time is None or ts <= opts.to_time
    )


def error_event(
    exc: CorruptionError | OSError | str, file: str | None = None, kind: str | None = None
) -> dict:
    if isinstance(exc, CorruptionError):
        return {
            "type": "error",
            "file": exc.file or file,
            "position": exc.position,
            "offset": exc.offset,
            "kind": exc.kind,
            "field": exc.field,
            "message": exc.message,
            "stored": exc.stored,
            "computed": exc.computed,
        }
    message = exc if isinstance(exc, str) else f"{exc.strerror or exc}"
    return {
        "type": "error",
        "file": file,
        "position": getattr(exc, "position", None),  # e.g. where a file shrank
        "offset": None,
        "kind": kind or UNREADABLE,
        "field": None,
        "message": message,
    }


def dump_paths(paths: list[Path], opts: DumpOptions) -> Iterator[dict]:
    """Every event, one at a time."""
    for chunk in dump_chunks(paths, opts):
        yield from chunk


def dump_chunks(paths: list[Path], opts: DumpOptions) -> Iterator[list[dict | bytes]]:
    """The events in lists (a batch's events travel together): the generator layers then cost
    once per batch, not once per record. With ``opts.json_lines`` record events are bytes (their
    finished JSON line); every other event stays a dict.

    The inputs are resolved first (kseg.storage.tree.resolve: a wrong path raises InputError
    before anything is printed). Every event from a partition's file carries ``topic`` and
    ``partition``; with several log.dirs roots every event also carries ``log_dir`` (JSON Lines;
    text and table name the file)."""
    if opts.batches_only and (
        opts.count or opts.record_filter is not None or opts.format_string is not None
    ):
        raise BadOption(
            "--batches-only shows no records: it cannot be combined with a record filter, "
            "--count or --format-string",
            "--batches-only",
        )
    if opts.count and opts.format_string is not None:
        raise BadOption("--count prints numbers only: leave out --format-string", "--count")
    sel = tree.resolve(paths, opts.topic, opts.partition)
    if opts.count:
        yield from _count_chunks(sel, opts)
        return
    if opts.json_lines or opts.record_filter is not None:
        kernel.compiled()  # a KSEG_KERNEL that cannot be had fails here, before any output
    several = sel.several_log_dirs
    budget = _Budget(opts.limit)
    for item in sel.items:
        # JSON only: text and table lines name the file already
        tagged = opts.json_lines or opts.format_string is not None  # %t and %p need them
        tags = partition_tags(item.name, item.log_dir if several else None) if tagged else {}
        if tagged and item.kind == tree.FILE and item.name is None and not item.log_dir:
            # a data file outside any <topic>-<partition> dir (not a root's own file): null
            tags = {"topic": None, "partition": None, **tags}
        if item.kind == tree.FILE:
            yield from dump_file(item.path, opts, budget, tags)
        elif item.kind == tree.PARTITION:
            yield from _dump_partition(item.path, opts, budget, tags)
        else:
            for f in tree.root_files(item.path):
                yield from dump_file(f, opts, budget, tags)
        if budget.spent:
            return


def _count_chunks(sel, opts: DumpOptions) -> Iterator[list[dict]]:
    """--count: per partition dir (or file given alone) one ``match_count`` event, the number
    of records the dump would have shown (those the filter keeps, within the selectors and
    --limit), and a ``match_total`` at the end; problems are ``error`` events as in a dump."""
    several = sel.several_log_dirs
    budget = _Budget(opts.limit)
    total = places = 0
    for item, file, chunks in _count_places(sel, opts, budget):
        n = 0
        for chunk in chunks:
            errors = []
            for ev in chunk:
                if ev is True:
                    n += 1
                elif ev["type"] == "error":
                    errors.append(ev)
            if errors:
                yield errors
        ev = {"type": "match_count", **partition_tags(item.name, item.log_dir if several else None)}
        if file is not None:
            ev["file"] = str(file)
        ev["matches"] = n
        yield [ev]
        total += n
        places += 1
        if budget.spent:
            break
    yield [{"type": "match_total", "matches": total, "partitions": places}]


def _count_places(sel, opts: DumpOptions, budget: _Budget) -> Iterator[tuple]:
    """(item, file or None, chunks) for each place --count counts: a partition dir, a file given
    alone, and a root's own files that hold records (``bootstrap.checkpoint``: the root is an
    item only without --topic/--partition), each such file on its own, as dump prints them."""
    for item in sel.items:
        if item.kind == tree.FILE:
            yield item, item.path, dump_file(item.path, opts, budget)
        elif item.kind == tree.PARTITION:
            yield item, None, _dump_partition(item.path, opts, budget)
        else:
            for f in tree.root_files(item.path):
                if F.file_kind(f).kind in _RECORDS:
                    yield item, f, dump_file(f, opts, budget)


def _counted(rec: tuple, name: str) -> bool:
    """--count's record event: a mark that _count_chunks counts."""
    return True


def partition_tags(name: F.PartitionName | None, log_dir: Path | None = None) -> dict:
    """The fields that say where an event comes from: topic and partition (when the file lies in
    a partition dir) and the log dir (only when several roots are given)."""
    tags: dict = {}
    if name is not None:
        tags["topic"] = name.topic
        tags["partition"] = name.partition
    if log_dir is not None:
        tags["log_dir"] = str(log_dir)
    return tags


def total_bytes(paths: list[Path]) -> int:
    """The bytes a dump of ``paths`` reads at most (for a progress bar): a listing, no reads."""
    import os

    total = 0
    for path in paths:
        try:
            if not path.is_dir():
                total += path.stat().st_size
                continue
            for top, _dirs, names in os.walk(path):
                for n in names:
                    try:
                        total += os.stat(os.path.join(top, n), follow_symlinks=False).st_size
                    except OSError:
                        pass
        except OSError:
            continue
    return total


def dump_progress(chunks: Iterator[list], bar) -> Iterator[list]:
    """Pass chunks through, moving ``bar`` (kseg.progress.Bar) by bytes: at each file, and within
    a file from a batch's position at most ten times a second (never per record)."""
    if not bar.enabled:
        yield from chunks
        return
    done = size = 0
    for chunk in chunks:
        if chunk:
            first = chunk[0]
            if type(first) is dict:
                if first["type"] == "file":
                    done += size
                    size = first.get("size") or 0
                    bar.update(completed=done)
                elif "position" in first and first["type"] == "batch" and bar.due():
                    bar.update(completed=done + first["position"])
            elif type(chunk) is RunChunk and bar.due():
                bar.update(completed=done + chunk.position)
        yield chunk
    bar.update(completed=done + size)


def _dump_partition(
    pdir: Path, opts: DumpOptions, budget: _Budget, tags: dict | None = None
) -> Iterator[list[dict]]:
    files = tree.partition_files(pdir)
    if opts.to_offset is not None:  # every offset of a segment is >= its base offset
        files = [
            f
            for f in files
            if F.file_kind(f).base_offset is None or F.file_kind(f).base_offset <= opts.to_offset
        ]
    if opts.from_offset is not None:
        # skip whole segments that end before the first wanted offset (next base <= from)
        bases = sorted({F.file_kind(f).base_offset for f in files if F.file_kind(f).kind == F.LOG})
        keep_from = max([b for b in bases if b <= opts.from_offset], default=None)
        if keep_from is not None:
            files = [
                f
                for f in files
                if F.file_kind(f).base_offset is None or F.file_kind(f).base_offset >= keep_from
            ]
    spans: dict[int, _Span] = {}  # by segment base offset; the .log comes before its indexes
    current: Segment | None = None  # a segment's files are listed together: open them once
    for f in files:
        kind = F.file_kind(f)
        if kind.kind == F.LOG and kind.base_offset is not None and not kind.temp_suffix:
            spans[kind.base_offset] = _Span()
        span = spans.get(kind.base_offset)
        seg = None
        if kind.kind in _SEGMENT_KINDS:
            seg = Segment(f, whole_indexes=True)  # see _file_events
            if current is not None and current.log == seg.log:
                seg = current
            current = seg  # the previous segment's indexes can go
        if kind.kind == F.LEADER_EPOCH_CHECKPOINT and _selecting(opts):
            span = _Span()  # the epochs of what the selection printed from this partition
            for s in spans.values():
                if s.lo is not None:
                    span.add(s.lo, s.hi)
            if span.lo is None:
                continue
        yield from dump_file(f, opts, budget, tags, span, seg)
        if budget.spent:
            return


_SEGMENT_KINDS = frozenset((F.LOG, F.INDEX, F.TIME_INDEX))


def dump_file(
    path: Path,
    opts: DumpOptions,
    budget: _Budget | None = None,
    tags: dict | None = None,
    span: _Span | None = None,
    segment: Segment | None = None,
) -> Iterator[list[dict]]:
    """One file's events; ``tags`` (see partition_tags) are added to every dict event (record
    events get them from their maker, in a fixed place). ``span``: its segment's log was dumped
    in this run (see _Span). ``segment``: the Segment ``path`` belongs to, when the caller
    holds it (its indexes are then opened once for all its files)."""
    if not tags:
        yield from _dump_file(path, opts, budget or _Budget(opts.limit), {}, span, segment)
        return
    for chunk in _dump_file(path, opts, budget or _Budget(opts.limit), tags, span, segment):
        for ev in chunk:
            if type(ev) is dict and ev["type"] != "record":
                ev.update(tags)
        yield chunk


def _dump_file(
    path: Path,
    opts: DumpOptions,
    budget: _Budget,
    tags: dict,
    span: _Span | None = None,
    segment: Segment | None = None,
) -> Iterator[list[dict]]:
    kind = F.file_kind(path)
    name = str(path)
    try:
        size = path.stat().st_size
        head = {"type": "file", "file": name, "kind": kind.kind, "size": size}
        if kind.temp_suffix:
            head["state"] = kind.temp_suffix.lstrip(".")
        if kind.kind == F.KRAFT_CHECKPOINT:
            head["snapshot_end_offset"], head["snapshot_epoch"] = F.snapshot_id(path)
        if kind.kind == F.UNKNOWN:
            yield [error_event("not a file kind kseg knows (by its name)", name, USAGE)]
            return
        if (opts.record_filter is not None or opts.count) and kind.kind not in _RECORDS:
            return  # a record filter or --count: only the files that hold records
        if _selecting(opts):
            # a selector shows only files it selects something from (files without offsets
            # or times, e.g. meta.properties or the checkpoint files, are left out)
            if kind.kind in _NO_OFFSETS:
                return
            yield from _with_head(
                head, _file_events(path, kind, name, opts, budget, span, tags, segment)
            )
        else:
            yield [head]
            yield from _file_events(path, kind, name, opts, budget, span, tags, segment)
    except OSError as exc:
        yield [error_event(exc, name)]


_RECORDS = frozenset((F.LOG, F.KAFKA07, F.KRAFT_CHECKPOINT, F.BOOTSTRAP_CHECKPOINT))

_NO_OFFSETS = frozenset(
    (
        F.OFFSET_CHECKPOINT,
        F.PARTITION_METADATA,
        F.META_PROPERTIES,
        F.CLEAN_SHUTDOWN,
        F.QUORUM_STATE,
    )
)


def _selecting(opts: DumpOptions) -> bool:
    return (
        opts.record_filter is not None
        or opts.from_offset is not None
        or opts.to_offset is not None
        or opts.from_time is not None
        or opts.to_time is not None
    )


def _with_head(head: dict, chunks: Iterator[list]) -> Iterator[list]:
    for chunk in chunks:
        if chunk:
            yield [head, *chunk]
            yield from chunks
            return


def _file_events(
    path: Path,
    kind,
    name: str,
    opts: DumpOptions,
    budget: _Budget,
    span,
    tags: dict,
    segment: Segment | None = None,
):
    if segment is None and kind.kind in _SEGMENT_KINDS:
        # indexes read whole, not mapped: a live broker may shrink them while they are read
        segment = Segment(path, whole_indexes=True)
    if kind.kind == F.LOG:
        with segment.mapped(sequential=True) as buf:
            yield from _dump_log(buf, name, segment, opts, budget, path, tags, span or _Span())
        return
    if kind.kind == F.KAFKA07:  # a Kafka 0.7 segment: byte offsets, no indexes
        from kseg.dump.dump07 import dump_segment07  # imports this module's error_event

        yield from dump_segment07(path, name, opts, budget, tags)
        return
    if kind.kind in (F.KRAFT_CHECKPOINT, F.BOOTSTRAP_CHECKPOINT):  # framed like a .log
        with mapped(path, sequential=True) as buf:
            yield from _dump_log(buf, name, None, opts, budget, path, tags, span or _Span())
        return
    offsets = _offset_range(opts, span)
    if kind.kind == F.INDEX:
        yield from _chunked(
            _dump_offset_index(segment.index(OFFSET_INDEX), name, segment.log_size(), offsets)
        )
        return
    if kind.kind == F.TIME_INDEX:
        yield from _chunked(_dump_time_index(segment.index(TIME_INDEX), name, opts, offsets))
        return
    data = read_file(path)  # small files: read whole
    yield from _chunked(_dump_small(kind.kind, data, name, path, opts, offsets))


def _chunked(events: Iterator[dict], size: int = 1024) -> Iterator[list[dict]]:
    chunk: list[dict] = []
    for ev in events:
        chunk.append(ev)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# --- .log ---------------------------------------------------------------------------------


def _scan_start(seg: Segment | None, buf, opts: DumpOptions) -> tuple[int, CorruptionError | None]:
    """Use the segment's indexes to skip what --from-offset/--from-time exclude (the Segment's
    lookups: a missing or unusable index only costs speed, a scan from the start; an entry that
    points nowhere valid is invalid data, reported, and costs the same scan)."""
    if seg is None or (opts.from_offset is None and opts.from_time is None):
        return 0, None  # nothing to skip, or a KRaft snapshot: no index
    target = opts.from_offset
    if opts.from_time is not None:
        at = seg.offset_for_time(opts.from_time)
        target = at if target is None else max(at, target)
    return seg.start_for(target, buf)


def _decoder_for(
    path: Path, opts: DumpOptions
) -> Callable[[bytes | None, bytes | None], dict | None] | None:
    from kseg.dump import internal_topics

    choice = opts.decoder
    if choice is None:
        choice = internal_topics.decoder_for_path(path)
    return internal_topics.decoder(choice) if choice else None


def _dump_log(
    buf,
    name: str,
    seg: Segment | None,
    opts: DumpOptions,
    budget: _Budget,
    path: Path,
    tags: dict,
    span: _Span,
) -> Iterator[list[dict]]:
    end = len(buf)
    limit_end = end if opts.max_bytes is None else min(end, opts.max_bytes)
    start, problem = _scan_start(seg, buf, opts)
    if problem is not None:  # the index lies: said, and the segment is scanned instead
        yield [error_event(problem, name)]
    decoder = None if opts.batches_only or opts.count else _decoder_for(path, opts)
    make_event = lines = None
    if opts.count:
        make_event = _counted
    elif opts.format_string is not None:
        from kseg.dump.format_string import record_formatter

        make_event = record_formatter(opts.format_string, tags)
    elif opts.json_lines and decoder is None and not opts.skip_record_metadata:
        make_event = record_json_maker(name, opts.payload, tags)  # records as ready JSON lines
        # and the compiled kernel's, for the batches it can render (not with a record filter:
        # the core's loop filters each record, kseg.dump.search)
        if make_event is not None and opts.record_filter is None:
            lines = kernel.json_records(
                _file_json(name, tags),
                opts.payload,
                opts.from_offset,
                opts.to_offset,
                opts.from_time,
                opts.to_time,
            )
    if make_event is None:
        make_event = record_event_maker(
            name, opts.payload, decoder, opts.skip_record_metadata, tags
        )
    runs = lines
    if opts.batches_only:
        lines = None  # no record lines; the batch lines of a run: the kernel's, with any mode
        runs = None
        if opts.json_lines:
            runs = kernel.json_records(
                b"", "base64", opts.from_offset, opts.to_offset, opts.from_time, opts.to_time
            )
    try:
        if opts.record_filter is not None and not opts.batches_only and kernel.compiled():
            # a search: the kernel walks the plain batches, the core decodes the candidates
            yield from _search_runs(buf, start, end, limit_end, name, opts, budget, make_event)
            return
        if runs is not None:  # runs of plain batches in the kernel, the rest one by one here
            yield from _kernel_runs(
                buf, start, end, limit_end, name, opts, budget, make_event, span, lines, runs,
                tags,
            )  # fmt: skip
            return
        for entry in iter_entries(buf, start, end, source=name):
            shown = _shown(entry, opts, limit_end)
            if shown is _END:
                return
            if shown:
                yield from _entry_events(entry, name, opts, budget, make_event, span, lines)
                if budget.spent or shown is _LAST:
                    return
    except CorruptionError as exc:
        yield [error_event(exc, name)]


_END = None  # _shown: nothing from here on is shown
_LAST = "last"  # _shown: show this entry, then nothing more


def _shown(entry, opts: DumpOptions, limit_end: int) -> bool | str | None:
    """Does _dump_log show this entry (True), skip it (False), end the file here (_END), or
    show it and end the file after it (_LAST)?"""
    if entry.position + entry.size > limit_end:
        return _END  # --max-bytes: only whole batches within the first N bytes
    last = False
    if opts.to_offset is not None:
        if isinstance(entry, RecordBatch) or not entry.is_compressed:
            if entry.base_offset > opts.to_offset:  # a legacy message's offset is exact
                return _END
        elif entry.last_offset > opts.to_offset:
            # a legacy wrapper's offset is its last inner one; its first is known only once
            # decompressed and may be selected (the records are filtered one by one). Every
            # later entry starts past the wrapper's last offset: the file ends after it.
            last = True
    if opts.from_offset is not None and entry.last_offset < opts.from_offset:
        return _END if last else False
    if (
        opts.from_time is not None
        and entry.max_timestamp < opts.from_time
        and format_of(entry.magic).timestamps
    ):
        return _END if last else False
    return _LAST if last else True


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
        window = min(self.limit_end, pos + kernel.RUN_WINDOW)
        if self.ensure is not None:
            try:
                window = min(window, self.ensure(pos, min(window, pos + kernel.READ_WINDOW)))
            except OSError:
                window = pos
        return window


def _kernel_runs(
    buf,
    start: int,
    end: int,
    limit_end: int,
    name: str,
    opts: DumpOptions,
    budget: _Budget,
    make_event,
    span: _Span,
    lines,
    runs,
    tags: dict,
) -> Iterator[list]:
    """_dump_log's loop with the kernel taking runs of plain batches (kseg._kernel.JsonRecords
    ``run``: their batch and record lines, the same bytes, selection and --limit), a window of
    the file per call, in parts of at most about kernel.JSON_PART bytes (a run's part stops
    after half of it; a batch with more than half of it in record lines: the core's path).
    Every entry the kernel leaves (legacy, control, compressed, a bad CRC, any problem, a torn
    or zero-filled tail, past --max-bytes or --to-offset) goes through the core's loop body,
    one entry, and the kernel carries on after it. A CorruptionError propagates as from
    iter_entries. ``runs``: the JsonRecords whose ``run`` takes the runs (``lines`` itself, or
    with --batches-only one for the batch lines alone, ``lines`` None)."""
    batch_file = orjson.dumps(name)
    batch_tail = orjson.dumps(tags)[1:-1] if tags else b""
    if batch_tail:
        batch_tail = b"," + batch_tail
    batches_only = opts.batches_only
    filtered = batches_only or _selecting(opts)  # --batches-only: span has every batch shown
    windows = _KernelWindows(buf, start, limit_end)
    run = runs.run
    pos = start
    while pos < end:
        window = windows.end_from(pos)
        if window > pos:
            left = budget.left
            text, stop, reason, emitted, lo, hi = run(
                buf, pos, window, batch_file, batch_tail,
                None if left is None else min(left, _MAX_LEFT), max(1, kernel.JSON_PART // 2),
                batches_only,
            )  # fmt: skip
            if left is not None:
                budget.left = left - emitted
            if emitted and filtered:
                span.add(lo, hi)
            if text:
                chunk = RunChunk((text,))
                chunk.position = pos
                yield chunk
            pos = stop
            if reason == kernel.RUN_LIMIT:
                return
            if reason != kernel.RUN_OTHER:
                continue  # the part is full, or the window done: on from where it stopped
        # the core's loop body for the one entry here (an empty window: one past --max-bytes,
        # or a file that shrank while read)
        entry = next(iter_entries(buf, pos, end, source=name), None)
        if entry is None:
            return
        shown = _shown(entry, opts, limit_end)
        if shown is _END:
            return
        if shown:
            yield from _entry_events(entry, name, opts, budget, make_event, span, lines)
            if budget.spent or shown is _LAST:
                return
        pos += entry.size


def _search_runs(
    buf, start: int, end: int, limit_end: int, name: str, opts: DumpOptions, budget, make_event
) -> Iterator[list]:
    """_dump_log's loop for a record search with the kernel active: the kernel walks and
    CRC-checks the plain valid v2 batches (kseg.kernel.walk_window); of those, a control batch
    (never matches) or an uncompressed one whose record bytes fail the filter's pre-check is
    passed over without a Python object, every other one goes through the core's loop body
    (_entry_events), exactly as without the kernel. Every entry the kernel leaves (legacy, a
    bad CRC or magic, a torn or zero-filled tail, past --max-bytes) goes through the core's
    loop body, one entry, and the kernel carries on after it."""
    from kseg.format.batch import ATTR_COMPRESSION, ATTR_CONTROL

    may_match = opts.record_filter.may_match
    from_offset, to_offset, from_time = opts.from_offset, opts.to_offset, opts.from_time
    unpack = kernel.ROW.iter_unpack
    windows = _KernelWindows(buf, start, limit_end)
    pos = start
    while pos < end:
        window = windows.end_from(pos)
        other = True
        if window > pos:
            rows, stop, other = kernel.walk_window(buf, pos, window)
            for bpos, size, _m, base, last, max_ts, _n, attrs, _pid, _ok, _ple in unpack(rows):
                # _shown for a valid v2 batch, then the pre-check; magic and CRC are the kernel's
                if to_offset is not None and base > to_offset:
                    return
                if (from_offset is not None and last < from_offset) or (
                    from_time is not None and max_ts < from_time
                ):
                    continue
                if attrs & ATTR_CONTROL or not (
                    attrs & ATTR_COMPRESSION or may_match(buf, bpos + HEADER_SIZE, bpos + size)
                ):
                    continue
                entry = RecordBatch(buf, bpos, name)
                yield from _entry_events(entry, name, opts, budget, make_event)
                if budget.spent:
                    return
            if stop > pos and not other:
                pos = stop
                continue  # the window is done: on from where it stopped
            pos = stop
        # the core's loop body for the one entry here
        entry = next(iter_entries(buf, pos, end, source=name), None)
        if entry is None:
            return
        shown = _shown(entry, opts, limit_end)
        if shown is _END:
            return
        if shown:
            yield from _entry_events(entry, name, opts, budget, make_event)
            if budget.spent or shown is _LAST:
                return
        pos += entry.size


def batch_event(entry, name: str, computed_crc: int | None = None) -> dict:
    """The batch (or legacy message) line; ``computed_crc``: the entry's CRC if the caller has
    computed it already (it is not computed twice)."""
    if computed_crc is None:
        computed_crc = entry.compute_crc()
    if isinstance(entry, RecordBatch):
        return {
            "type": "batch",
            "file": name,
            "position": entry.position,
            "base_offset": entry.base_offset,
            "last_offset": entry.last_offset,
            "count": entry.records_count,
            "magic": entry.magic,
            "compression": entry.compression,
            "crc": entry.crc,
            "crc_valid": computed_crc == entry.crc,
            "size": entry.size,
            "timestamp_type": entry.timestamp_type,
            "base_timestamp": entry.base_timestamp,
            "max_timestamp": entry.max_timestamp,
            "producer_id": entry.producer_id,
            "producer_epoch": entry.producer_epoch,
            "base_sequence": entry.base_sequence,
            "last_sequence": entry.last_sequence,
            "partition_leader_epoch": entry.partition_leader_epoch,
            "is_transactional": entry.is_transactional,
            "is_control": entry.is_control,
            "delete_horizon_ms": entry.delete_horizon_ms,
        }
    return {
        "type": "batch",
        "file": name,
        "position": entry.position,
        "base_offset": None,  # filled in below when the wrapper can be read
        "last_offset": entry.offset,
        "count": None,
        "magic": entry.magic,
        "compression": entry.compression,
        "crc": entry.crc,
        "crc_valid": computed_crc == entry.crc,
        "size": entry.size,
        "timestamp_type": entry.timestamp_type,
        "base_timestamp": entry.timestamp,
        "max_timestamp": entry.timestamp,
        "producer_id": -1,
        "producer_epoch": -1,
        "base_sequence": -1,
        "last_sequence": -1,
        "partition_leader_epoch": -1,
        "is_transactional": False,
        "is_control": False,
        "delete_horizon_ms": None,
    }


def _entry_events(
    entry,
    name: str,
    opts: DumpOptions,
    budget: _Budget,
    make_event,
    span: _Span | None = None,
    lines=None,
) -> Iterator[list]:
    """All events of one top-level entry: the batch, its problems, its records, in lists of at
    most one record chunk (so a batch of millions of records never exists as one list).
    ``span`` learns the offsets a selection printed. ``lines``: the compiled kernel's record
    lines for this file (kseg.kernel.json_records), used for the data batches it renders."""
    computed = entry.compute_crc()  # once per entry
    ev = batch_event(entry, name, computed)
    if not ev["crc_valid"] and entry.magic < V2_MAGIC:
        end = entry.position + entry.size
        if v2_crc_matches(entry.buf, entry.position, end):  # a v2 batch with magic 0/1
            entry = RecordBatch(entry.buf, entry.position, entry.source)
            computed = entry.crc  # what v2_crc_matches just found the CRC-32C to be
            ev = batch_event(entry, name, computed)
    problems = []
    if isinstance(entry, RecordBatch) and entry.magic != V2_MAGIC:
        crc_ok = ev["crc_valid"]
        problems.append(
            CorruptionError(
                bad_magic_message(entry.magic, entry.position, crc_ok),
                kind=BAD_MAGIC,
                position=entry.position,
                field="magic",
                stored=entry.magic,
                offset=entry.base_offset,
                file=name,
            )
        )
    if not ev["crc_valid"]:
        problems.append(
            CorruptionError(
                format_of(entry.magic).crc_mismatch,
                kind="crc_mismatch",
                position=entry.position,
                field="crc",
                stored=entry.crc,
                computed=computed,
                offset=entry.last_offset,
                file=name,
            )
        )
    if not isinstance(entry, RecordBatch):
        try:
            if opts.batches_only and entry.is_compressed:
                # a wrapper's first offset and count need it decompressed whole: not here; its
                # first message only, to judge the wrapper as verify does (check_wrapper)
                entry.check_wrapper()
            elif entry.is_compressed:  # decompressed once: the records below reuse the bytes
                ev["count"], ev["base_offset"] = entry.inner_summary(keep=True)
            else:
                ev["base_offset"], ev["count"] = entry.base_offset, entry.records_count
        except CorruptionError as exc:
            problems.append(exc)
    out = [ev] + [error_event(p, name) for p in problems]
    if opts.skip_record_metadata and not opts.batches_only:
        out = out[1:]  # like kafka-dump-log: the records' payloads, no batch lines
    if opts.batches_only:
        if budget.take():
            if span is not None and ev["base_offset"] is not None:
                span.add(ev["base_offset"], ev["last_offset"])
            yield out
        return
    if any(p.kind not in ("crc_mismatch", BAD_MAGIC) for p in problems):
        yield out
        return
    keep = opts.record_filter
    filtered = opts.from_offset is not None or opts.to_offset is not None
    filtered = filtered or opts.from_time is not None or opts.to_time is not None
    filtered = filtered or keep is not None
    # with a selector, the batch is shown only once one of its records is: until then `out`
    # holds it back
    pending = filtered and not problems
    if keep is not None and (
        ev["is_control"] or not keep.batch_may_match(entry, opts.max_decompressed)
    ):
        # no record of it can match (control records never do): its problems only
        if not pending:
            yield out
        return
    if lines is not None and isinstance(entry, RecordBatch) and not ev["is_control"]:
        rendered = yield from _kernel_records(entry, lines, out, opts, budget, span, pending)
        if rendered:
            return
    make = _control_event if ev["is_control"] else make_event
    unbounded = not filtered and budget.left is None
    chunks = entry.record_chunks(opts.max_decompressed)
    problem = None
    while True:
        try:
            recs = next(chunks, None)
        except CorruptionError as exc:
            # the good records before the bad one are shown; the traceback is dropped (it would
            # keep the decoder's frames, and their buffers, alive in a cycle)
            recs, problem = exc.records, exc.with_traceback(None)
        if recs is None:
            break
        if unbounded:
            out.extend([make(rec, name) for rec in recs])
        else:
            for rec in recs:
                if filtered:
                    off, ts = rec[4], rec[2]
                    if opts.from_offset is not None and off < opts.from_offset:
                        continue
                    if opts.to_offset is not None and off > opts.to_offset:
                        recs = None
                        break
                    if (opts.from_time is not None and ts < opts.from_time) or (
                        opts.to_time is not None and ts > opts.to_time
                    ):
                        continue
                    if keep is not None and not keep.matches(rec[0], rec[1], rec[3]):
                        continue
                if not budget.take():
                    recs = None
                    break
                out.append(make(rec, name))
                if filtered:
                    pending = False
                    if span is not None:
                        span.add(rec[4], rec[4])
        if problem is not None or recs is None:
            break
        if not pending:
            yield out
            out = []
    if problem is not None:
        out.append(error_event(problem, name))
    elif pending:
        return  # the selection chose no record of this batch: nothing to show of it
    if out:
        yield out


def _kernel_records(
    entry: RecordBatch,
    lines,
    out: list,
    opts: DumpOptions,
    budget: _Budget,
    span: _Span | None,
    pending: bool,
):
    """The batch's records as the kernel's JSON lines (whole parts of up to kernel.JSON_PART
    bytes), with ``out`` (the batch and its problems) before them; the same events, bytes and
    selection as the core's loop in _entry_events. Returns False, having yielded nothing, when
    the core must take the batch: its bytes are no longer in the window, it does not
    decompress, or any record is not valid (the kernel checks all of them before the first
    line goes out, so the core reports the problem exactly as it would have)."""
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
    filtered = span is not None and _selecting(opts)
    done, validated = 0, False
    while start >= 0:
        left = budget.left
        got = lines.render(
            data, start, end, entry.records_count, entry.base_offset, entry.base_timestamp,
            log_append_time, entry.base_sequence, done, validated,
            None if left is None else min(left, _MAX_LEFT), kernel.JSON_PART,
        )  # fmt: skip
        if got is None:
            if validated:  # cannot happen: the bytes were checked and do not change
                raise AssertionError(f"{entry.source}: batch at byte {base} changed while read")
            return False
        text, start, done, emitted, lo, hi = got
        validated = True
        if left is not None:
            budget.left = left - emitted
        if emitted:
            pending = False
            if filtered:
                span.add(lo, hi)
            out.append(text)
        if not pending and out:
            yield out
            out = []
    return True


_MAX_LEFT = 1 << 62  # a --limit beyond any segment's records


def _control_event(rec: tuple, name: str) -> dict:
    ev = {"type": "control", "file": name, "offset": rec[4], "timestamp": rec[2]}
    try:
        ctl = parse_control(rec[0], rec[1])
        ev.update(
            control_type=ctl.type_name, version=ctl.version, coordinator_epoch=ctl.coordinator_epoch
        )
    except CorruptionError as exc:
        ev.update(control_type=None, version=None, coordinator_epoch=None, error=exc.message)
        return ev
    if ctl.type in KRAFT_CONTROL_NAMES:  # LeaderChange, SnapshotHeader/Footer, KRaftVersion/Voters
        from kseg.format.metadata import decode_kraft_control  # the schema tables load on first use

        try:
            ev["decoded"] = decode_kraft_control(ctl.type, rec[1])
        except CorruptionError as exc:
            ev["decoded"] = _decode_error(exc)
    return ev


def _decode_error(exc: CorruptionError) -> dict:
    return {"error": exc.message, "field": exc.field}


def record_event_maker(
    name: str, mode: str, decoder=None, skip: bool = False, tags: dict | None = None
):
    """A function (record tuple, file) -> record event, specialised for one file, payload mode and
    decoder (it runs once per record: every lookup bound here is one it does not repeat).
    ``mode`` "none" shows sizes and header keys only."""
    enc = None if mode == "none" else P.encoder(mode)
    tags = tags or {}

    def make(rec: tuple, _name: str = name) -> dict:
        key, value, ts, headers, offset, seq, ts_type = rec
        ev = {
            "type": "record",
            "file": name,
            **tags,
            "offset": offset,
            "timestamp": ts,
            "timestamp_type": ts_type,
            "key_size": -1 if key is None else len(key),
            "value_size": -1 if value is None else len(value),
            "sequence": seq,
        }
        if enc is None:
            ev["header_keys"] = [k for k, _ in headers]
        else:
            ev["key"], ev["key_encoding"] = enc(key)
            ev["value"], ev["value_encoding"] = enc(value)
            shown = [enc(v) for _, v in headers]
            ev["headers"] = [[k, sv[0]] for (k, _), sv in zip(headers, shown, strict=True)]
            ev["header_encodings"] = [sv[1] for sv in shown]
        if decoder is not None:
            try:
                ev["decoded"] = decoder(key, value)
            except CorruptionError as exc:
                ev["decoded"] = _decode_error(exc)
        if skip:  # --skip-record-metadata: the decoded payload, or the raw key and value
            keep = _SKIPPED_DECODED if "decoded" in ev else _SKIPPED_RAW
            return {**{k: ev[k] for k in keep if k in ev}, **tags}
        return ev

    return make


_SKIPPED_DECODED = ("type", "file", "offset", "decoded")
_SKIPPED_RAW = ("type", "file", "offset", "key", "key_encoding", "value", "value_encoding")


_RECORD_LINE = (
    b'{"type":"record","file":%s,"offset":%d,"timestamp":%d,"timestamp_type":"%s","key_size":%d,'
    b'"value_size":%d,"sequence":%d,"key":%s,"key_encoding":%s,"value":%s,"value_encoding":%s,'
    b'"headers":%s,"header_encodings":%s}\n'
)


def _file_json(name: str, tags: dict | None) -> bytes:
    """The file and the partition tags right after it, as record_event_maker orders them."""
    return orjson.dumps({"file": name, **(tags or {})})[len(b'{"file":') : -1]


def record_json_maker(name: str, mode: str, tags: dict | None = None):
    """A function (record tuple, file) -> the JSON line of its event, byte for byte what
    orjson.dumps(record_event_maker(...)(rec)) + newline gives (a test holds them equal), without
    building the dict: the dict costs more than the JSON encoding. None when not applicable."""
    if mode == "none":
        return None
    dumps = orjson.dumps
    file_json = _file_json(name, tags)
    ts_types = {t: t.encode() for t in ("CreateTime", "LogAppendTime", "NoTimestampType")}
    line = _RECORD_LINE
    b64 = b2a_base64
    enc = P.encoder(mode)

    def field(data):
        if mode == "base64":
            return (
                (b"null", b"null")
                if data is None
                else (b'"' + b64(data, newline=False) + b'"', b'"base64"')
            )
        shown, encoding = enc(data)
        return dumps(shown), b"null" if encoding is None else b'"' + encoding.encode() + b'"'

    def headers_json(headers) -> tuple[bytes, bytes]:
        parts = [(hk, field(hv)) for hk, hv in headers]
        hs = b"[" + b",".join(b"[" + dumps(hk) + b"," + f[0] + b"]" for hk, f in parts) + b"]"
        return hs, b"[" + b",".join(f[1] for _, f in parts) + b"]"

    if mode == "base64":  # the common scripting mode, inlined: it runs once per record
        # one template per null/non-null key and value, quotes included: no concatenations
        def variant(key_null: bool, value_null: bool) -> bytes:
            k = b'null,"key_encoding":null' if key_null else b'"%s","key_encoding":"base64"'
            v = b'null,"value_encoding":null' if value_null else b'"%s","value_encoding":"base64"'
            return (
                b'{"type":"record","file":%s,"offset":%d,"timestamp":%d,"timestamp_type":"%s",'
                b'"key_size":%d,"value_size":%d,"sequence":%d,"key":'
                + k
                + b',"value":'
                + v
                + b',"headers":%s,"header_encodings":%s}\n'
            )

        both, no_key, no_value, neither = (
            variant(False, False),
            variant(True, False),
            variant(False, True),
            variant(True, True),
        )

        def make(rec: tuple, _name: str = name) -> bytes:
            key, value, ts, headers, offset, seq, ts_type = rec
            hs, he = headers_json(headers) if headers else (b"[]", b"[]")
            t = ts_types[ts_type]
            if key is not None and value is not None:
                return both % (
                    file_json,
                    offset,
                    ts,
                    t,
                    len(key),
                    len(value),
                    seq,
                    b64(key, newline=False),
                    b64(value, newline=False),
                    hs,
                    he,
                )
            if value is not None:
                return no_key % (
                    file_json,
                    offset,
                    ts,
                    t,
                    -1,
                    len(value),
                    seq,
                    b64(value, newline=False),
                    hs,
                    he,
                )
            if key is not None:
                return no_value % (
                    file_json,
                    offset,
                    ts,
                    t,
                    len(key),
                    -1,
                    seq,
                    b64(key, newline=False),
                    hs,
                    he,
                )
            return neither % (file_json, offset, ts, t, -1, -1, seq, hs, he)

        return make

    def make(rec: tuple, _name: str = name) -> bytes:
        key, value, ts, headers, offset, seq, ts_type = rec
        k, ke = field(key)
        v, ve = field(value)
        hs, he = headers_json(headers) if headers else (b"[]", b"[]")
        ks = -1 if key is None else len(key)
        vs = -1 if value is None else len(value)
        return line % (file_json, offset, ts, ts_types[ts_type], ks, vs, seq, k, ke, v, ve, hs, he)

    return make


# --- indexes and small files --------------------------------------------------------------


def _opened(index) -> object:
    """The view of a segment's index file being dumped (its OSError goes to the caller)."""
    if index.error is not None:
        raise index.error
    return index.view


def _dump_offset_index(
    index, name: str, log_size: int | None, offsets: tuple[int, int] | None = None
) -> Iterator[dict]:
    idx = _opened(index)
    prev = None
    reported = False
    lo, hi = offsets or (None, None)
    for n, e in enumerate(idx):
        if offsets is None or lo <= e.offset <= hi:
            yield {"type": "index_entry", "file": name, "offset": e.offset, "position": e.position}
        problem = None
        if prev is not None and (e.offset <= prev.offset or e.position <= prev.position):
            problem = f"entry {n} ({e.offset}, {e.position}) does not increase after ({prev.offset}, {prev.position})"
        elif e.position < 0:
            problem = f"entry {n} points at byte {e.position}, a negative position"
        elif log_size is not None and e.position >= log_size:
            problem = (
                f"entry {n} points at byte {e.position}, past the end of the {log_size}-byte log"
            )
        if problem and not reported:
            reported = True  # the first one says enough; `kseg verify` lists them all
            yield error_event(
                CorruptionError(
                    problem, kind="invalid_index", position=n * idx.ENTRY_SIZE, offset=e.offset
                ),
                name,
            )
        prev = e
    yield from _index_tail(index, name, offsets is not None)


def _index_tail(index, name: str, selecting: bool = False) -> Iterator[dict]:
    """After an index's entries: Kafka's sanity check, and the zero padding if preallocated."""
    idx = index.view
    if index.problem is not None:
        yield error_event(index.problem.in_file(name), name)
    if idx.padded_bytes and not selecting:
        yield {
            "type": "index_padding",
            "file": name,
            "entries": len(idx),
            "padded_bytes": idx.padded_bytes,
        }


def _dump_time_index(
    index, name: str, opts: DumpOptions, offsets: tuple[int, int] | None
) -> Iterator[dict]:
    """Entries within the offset range; dumped without its log, within the time window."""
    idx = _opened(index)
    by_time = offsets is None and (opts.from_time is not None or opts.to_time is not None)
    for e in idx:
        if offsets is not None and not offsets[0] <= e.offset <= offsets[1]:
            continue
        if by_time and not _in_times(e.timestamp, opts):
            continue
        yield {
            "type": "timeindex_entry",
            "file": name,
            "timestamp": e.timestamp,
            "offset": e.offset,
        }
    yield from _index_tail(index, name, offsets is not None or by_time)


def _dump_small(
    kind: str,
    data: bytes,
    name: str,
    path: Path,
    opts: DumpOptions | None = None,
    offsets: tuple[int, int] | None = None,
) -> Iterator[dict]:
    """Small files whole; with selectors, only the entries that concern the selected offsets
    (txn index: aborted transactions overlapping them; producer state: last written within the
    offsets and the time window; leader epochs: those whose range overlaps the offsets)."""
    opts = opts or DumpOptions()
    lo, hi = offsets or (-(1 << 63), (1 << 63) - 1)
    try:
        if kind == F.TXN_INDEX:
            for e in tx.read_entries(data):
                if e.last_offset < lo or e.first_offset > hi:
                    continue
                yield {
                    "type": "txn_index_entry",
                    "file": name,
                    "version": e.version,
                    "producer_id": e.producer_id,
                    "first_offset": e.first_offset,
                    "last_offset": e.last_offset,
                    "last_stable_offset": e.last_stable_offset,
                }
        elif kind == F.SNAPSHOT:
            from kseg.format import producer_snapshot as ps  # only for a .snapshot (start-up)

            snap = ps.read_snapshot(data)
            for e in snap.entries:
                if lo <= e.last_offset <= hi and _in_times(e.timestamp, opts):
                    yield {"type": "producer_state", "file": name, **_asdict(e)}
        elif kind == F.LEADER_EPOCH_CHECKPOINT:
            epochs = cp.read_leader_epoch_checkpoint(data)
            for i, e in enumerate(epochs):
                end = epochs[i + 1].start_offset - 1 if i + 1 < len(epochs) else (1 << 63) - 1
                if e.start_offset > hi or end < lo:
                    continue
                yield {
                    "type": "leader_epoch",
                    "file": name,
                    "epoch": e.epoch,
                    "start_offset": e.start_offset,
                }
        elif kind == F.OFFSET_CHECKPOINT:
            for e in cp.read_offset_checkpoint(data) if data.strip() else []:
                yield {
                    "type": "checkpoint_entry",
                    "file": name,
                    "checkpoint": path.name,
                    "topic": e.topic,
                    "partition": e.partition,
                    "offset": e.offset,
                }
        elif kind == F.PARTITION_METADATA:
            yield {"type": "partition_metadata", "file": name, **cp.read_partition_metadata(data)}
        elif kind == F.META_PROPERTIES:
            yield {"type": "meta_properties", "file": name, "properties": cp.read_properties(data)}
        elif kind == F.QUORUM_STATE:
            from kseg.format.metadata import read_quorum_state

            yield {"type": "quorum_state", "file": name, **read_quorum_state(data)}
        elif kind == F.CLEAN_SHUTDOWN:
            yield {"type": "clean_shutdown", "file": name, **cp.read_clean_shutdown(data)}
    except CorruptionError as exc:
        yield error_event(exc.in_file(name), name)


def _asdict(obj) -> dict:
    return {f: getattr(obj, f) for f in obj.__slots__}
