"""The events of one top-level entry of a log (a v2 batch or a legacy message): its batch line,
its problems (bad magic, CRC mismatch, a bad wrapper), and its records as the selection, the
record search and --limit choose them."""

from __future__ import annotations

from collections.abc import Generator, Iterator

from kseg.dump.error_events import BAD_MAGIC, error_event
from kseg.dump.kernel_records import kernel_records
from kseg.dump.options import DumpOptions
from kseg.dump.record_events import control_event
from kseg.dump.selection import END, LAST, Budget, Span, show_entry
from kseg.format.batch import RecordBatch
from kseg.format.errors import CorruptionError
from kseg.format.log import bad_magic_message, v2_crc_matches
from kseg.format.magic import CURRENT_MAGIC as V2_MAGIC
from kseg.format.magic import format_of


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


def shown_entry_events(
    entry,
    name: str,
    opts: DumpOptions,
    limit_end: int,
    budget: Budget,
    make_event,
    span: Span | None = None,
    lines=None,
) -> Generator[list, None, bool]:
    """The core's loop body for one top-level entry: its events when the selection shows it;
    returns True where the dump of this file ends (past the selection, or the budget spent)."""
    shown = show_entry(entry, opts, limit_end)
    if shown is END:
        return True
    if shown:
        yield from entry_events(entry, name, opts, budget, make_event, span, lines)
        if budget.spent or shown is LAST:
            return True
    return False


def entry_events(
    entry,
    name: str,
    opts: DumpOptions,
    budget: Budget,
    make_event,
    span: Span | None = None,
    lines=None,
) -> Iterator[list]:
    """All events of one top-level entry: the batch, its problems, its records, in lists of at
    most one record chunk (so a batch of millions of records never exists as one list).
    ``span`` learns the offsets a selection printed. ``lines``: the compiled kernel's record
    lines for this file (kseg.dump.kernel_json.json_records), used for the data batches it renders."""
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
        rendered = yield from kernel_records(entry, lines, out, opts, budget, span, pending)
        if rendered:
            return
    make = control_event if ev["is_control"] else make_event
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
