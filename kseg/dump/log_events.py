"""The events of a log (a .log segment, or a KRaft snapshot or bootstrap.checkpoint, framed
like one): where the walk starts (the segment's indexes), which record events it makes (dicts,
JSON lines, --format-string bytes, --count marks), and the walk itself, through the compiled
kernel's runs where they apply."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from kseg import kernel
from kseg.dump.batch_events import shown_entry_events
from kseg.dump.error_events import error_event, skipped_event
from kseg.dump.kernel_runs import kernel_runs, search_runs
from kseg.dump.options import DumpOptions
from kseg.dump.record_events import counted, record_event_maker
from kseg.dump.selection import Budget, Span
from kseg.format.errors import CorruptionError
from kseg.format.log import iter_entries
from kseg.format.resync import skip_from
from kseg.storage.kernel_walk import last_offset_before, resync_scanner
from kseg.storage.segment import Segment


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


def _next_base(seg: Segment | None) -> int | None:
    """The base offset of the live segment after ``seg`` in its directory (None: none, or not
    a live segment): a range skipped up to ``seg``'s end held the offsets below it."""
    if seg is None or seg.temp_suffix:
        return None
    from kseg.storage import files as F

    try:
        names = os.listdir(seg.dir)
    except (OSError, TypeError):  # a URI's directory: not listed here
        return None
    later = [
        k.base_offset
        for k in map(F.file_kind, names)
        if k.kind == F.LOG and not k.temp_suffix and (k.base_offset or -1) > seg.base_offset
    ]
    return min(later, default=None)


def dump_log(
    buf,
    name: str,
    seg: Segment | None,
    opts: DumpOptions,
    budget: Budget,
    path: Path,
    tags: dict,
    span: Span,
) -> Iterator[list[dict]]:
    end = len(buf)
    limit_end = end if opts.max_bytes is None else min(end, opts.max_bytes)
    start, problem = _scan_start(seg, buf, opts)
    if problem is not None:  # the index lies: said, and the segment is scanned instead
        yield [error_event(problem, name)]
    decoder = None if opts.batches_only or opts.count else _decoder_for(path, opts)
    make_event = lines = None
    json_lines = opts.json_lines
    found = None  # --payload schema: findings made with the records (kseg.dump.schema_events)
    if opts.count:
        make_event = counted
    elif opts.payload == "schema" and decoder is None and not opts.batches_only:
        from kseg.dump import schema_events

        found = schema_events.Found()
        if opts.format_string is not None:
            from kseg.dump.format_string import record_formatter

            shown = schema_events.shown_fields(name, opts.schemas, tags, found)
            make_event = record_formatter(opts.format_string, tags, shown)
        else:
            make_event = schema_events.record_maker(
                name, opts.schemas, opts.skip_record_metadata, tags, found
            )
    elif opts.format_string is not None:
        from kseg.dump.format_string import record_formatter

        make_event = record_formatter(opts.format_string, tags)
    elif json_lines is not None and decoder is None and not opts.skip_record_metadata:
        make_event = json_lines.record_maker(name, opts.payload, tags)  # ready JSON lines
        # and the compiled kernel's, for the batches it can render (not with a record filter:
        # the core's loop filters each record, kseg.dump.search)
        if make_event is not None and opts.record_filter is None:
            lines = json_lines.kernel_records(name, tags, opts)
    if make_event is None:
        mode = "auto" if opts.payload == "schema" else opts.payload  # an internal topic's
        make_event = record_event_maker(name, mode, decoder, opts.skip_record_metadata, tags)
    runs = lines
    if opts.batches_only:
        lines = None  # no record lines; the batch lines of a run: the kernel's, with any mode
        runs = None
        if json_lines is not None:
            runs = json_lines.kernel_batches(opts)
    walk = _walk(
        buf, seg, opts, budget, name, start, end, limit_end, make_event, span, lines, runs, tags
    )
    if found is None:
        yield from walk
    else:
        from kseg.dump.schema_events import with_findings

        yield from with_findings(walk, found)


def _walk(buf, seg, opts, budget, name, start, end, limit_end, make_event, span, lines, runs, tags):
    """dump_log's walk: its events, in chunks."""
    committed = opts.committed  # read_committed: the batches a consumer is handed
    # --resync: the offset before the first entry (entries found by a resync hold higher ones)
    last = -1 if seg is None else seg.base_offset - 1
    doubt = False  # the last range skipped was ambiguous (as walk_resync tracks it)
    while True:
        try:
            if opts.record_filter is not None and not opts.batches_only and kernel.compiled():
                # a search: the kernel walks the plain batches, the core decodes the candidates
                yield from search_runs(buf, start, end, limit_end, name, opts, budget, make_event)
                return
            if runs is not None:  # runs of plain batches in the kernel, the rest one by one here
                yield from kernel_runs(
                    buf, start, end, limit_end, name, opts, budget, make_event, span, lines,
                    runs, tags,
                )  # fmt: skip
                return
            for entry in iter_entries(buf, start, end, source=name, validate=opts.resync):
                if committed is not None and not committed.keeps_entry(entry):
                    continue
                if (yield from shown_entry_events(
                    entry, name, opts, limit_end, budget, make_event, span, lines
                )):  # fmt: skip
                    return
            return
        except CorruptionError as exc:
            if not opts.resync:
                yield [error_event(exc, name)]
                return
            # the walk stopped at damage: the range it cannot read is an event, and the walk
            # goes on where intact entries start again (kseg.format.resync, the one rule)
            last = last_offset_before(buf, start, exc.position, last)
            skipped, resumed = skip_from(
                buf, exc, start, end, last, scan=resync_scanner(), after_ambiguous=doubt,
                before_offset=_next_base(seg),
            )  # fmt: skip
            doubt = skipped.ambiguous
            yield [skipped_event(skipped, name)]
            if resumed is None:
                return
            start = resumed
