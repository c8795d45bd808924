"""The events of one file, by its kind (a file head, then its log, index or small-file events),
and of one partition dir: which of its files and segments a selection reads, each segment's
files opened once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kseg.dump.error_events import USAGE, error_event
from kseg.dump.indexes import dump_offset_index, dump_time_index
from kseg.dump.log_events import dump_log
from kseg.dump.options import DumpOptions
from kseg.dump.selection import Budget, Span, offset_range, selecting
from kseg.dump.small_files import dump_small_file
from kseg.format.errors import CorruptionError
from kseg.storage import files as F
from kseg.storage import tree
from kseg.storage.mapped import mapped, read_slices
from kseg.storage.segment import OFFSET_INDEX, TIME_INDEX, Segment
from kseg.storage.side_files import read_side_file

# the kinds that hold records (a record filter or --count reads only these)
RECORD_KINDS = frozenset((F.LOG, F.KAFKA07, F.KRAFT_CHECKPOINT, F.BOOTSTRAP_CHECKPOINT))

_NO_OFFSETS = frozenset(
    (
        F.OFFSET_CHECKPOINT,
        F.PARTITION_METADATA,
        F.META_PROPERTIES,
        F.CLEAN_SHUTDOWN,
        F.QUORUM_STATE,
    )
)

_SEGMENT_KINDS = frozenset((F.LOG, F.INDEX, F.TIME_INDEX))


def dump_partition(
    pdir: Path, opts: DumpOptions, budget: Budget, tags: dict | None = None
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
    spans: dict[int, Span] = {}  # by segment base offset; the .log comes before its indexes
    current: Segment | None = None  # a segment's files are listed together: open them once
    for f in files:
        kind = F.file_kind(f)
        if kind.kind == F.LOG and kind.base_offset is not None and not kind.temp_suffix:
            spans[kind.base_offset] = Span()
        span = spans.get(kind.base_offset)
        seg = None
        if kind.kind in _SEGMENT_KINDS:
            seg = Segment(f, whole_indexes=True)  # see _file_events
            if current is not None and current.log == seg.log:
                seg = current
            current = seg  # the previous segment's indexes can go
        if kind.kind == F.LEADER_EPOCH_CHECKPOINT and selecting(opts):
            span = Span()  # the epochs of what the selection printed from this partition
            for s in spans.values():
                if s.lo is not None:
                    span.add(s.lo, s.hi)
            if span.lo is None:
                continue
        yield from dump_file(f, opts, budget, tags, span, seg)
        if budget.spent:
            return


def dump_file(
    path: Path,
    opts: DumpOptions,
    budget: Budget | None = None,
    tags: dict | None = None,
    span: Span | None = None,
    segment: Segment | None = None,
) -> Iterator[list[dict]]:
    """One file's events; ``tags`` (see kseg.dump.plan.partition_tags) are added to every dict
    event (record events get them from their maker, in a fixed place). ``span``: its segment's
    log was dumped in this run (see Span). ``segment``: the Segment ``path`` belongs to, when the
    caller holds it (its indexes are then opened once for all its files)."""
    if not tags:
        yield from _dump_file(path, opts, budget or Budget(opts.limit), {}, span, segment)
        return
    for chunk in _dump_file(path, opts, budget or Budget(opts.limit), tags, span, segment):
        for ev in chunk:
            if type(ev) is dict and ev["type"] != "record":
                ev.update(tags)
        yield chunk


def _dump_file(
    path: Path,
    opts: DumpOptions,
    budget: Budget,
    tags: dict,
    span: Span | None = None,
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
        if (opts.record_filter is not None or opts.count) and kind.kind not in RECORD_KINDS:
            return  # a record filter or --count: only the files that hold records
        if selecting(opts):
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
    budget: Budget,
    span,
    tags: dict,
    segment: Segment | None = None,
):
    if segment is None and kind.kind in _SEGMENT_KINDS:
        # indexes read whole, not mapped: a live broker may shrink them while they are read
        segment = Segment(path, whole_indexes=True)
    if kind.kind == F.LOG:
        with segment.mapped(sequential=True) as buf:
            yield from dump_log(buf, name, segment, opts, budget, path, tags, span or Span())
        too_big = segment.oversize()  # dumped: the part Kafka addresses
        if too_big is not None:
            yield [error_event(too_big, name)]
        return
    if kind.kind == F.KAFKA07:  # a Kafka 0.7 segment: byte offsets, no indexes
        from kseg.dump.dump07 import dump_segment07

        yield from dump_segment07(path, name, opts, budget, tags)
        return
    if kind.kind in (F.KRAFT_CHECKPOINT, F.BOOTSTRAP_CHECKPOINT):  # framed like a .log
        with mapped(path, sequential=True) as buf:
            yield from dump_log(buf, name, None, opts, budget, path, tags, span or Span())
        return
    offsets = offset_range(opts, span)
    if kind.kind == F.INDEX:
        yield from _chunked(
            dump_offset_index(segment.index(OFFSET_INDEX), name, segment.log_size(), offsets)
        )
        return
    if kind.kind == F.TIME_INDEX:
        yield from _chunked(dump_time_index(segment.index(TIME_INDEX), name, opts, offsets))
        return
    if kind.kind == F.TXN_INDEX:
        data = read_slices(path)  # read in pieces as its entries are shown
    else:
        try:
            data = read_side_file(path, kind.kind)  # small files: whole, up to Kafka's bound
        except CorruptionError as exc:  # larger than Kafka writes one: not read
            yield [error_event(exc, name)]
            return
    yield from _chunked(dump_small_file(kind.kind, data, name, path, opts, offsets))


def _chunked(events: Iterator[dict], size: int = 1024) -> Iterator[list[dict]]:
    chunk: list[dict] = []
    for ev in events:
        chunk.append(ev)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
