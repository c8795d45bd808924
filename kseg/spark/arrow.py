"""The one decoder behind the Spark source and any fallback path:
``(file, byte range) -> pyarrow.RecordBatch``es. Imports pyarrow, never pyspark.

Arrow types match Spark's exactly (``binary``, not ``large_binary``; ``timestamp[us, tz=UTC]``),
and the records schema is Spark's Kafka source's: same names, types and nullability.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa

from kseg.format.batch import HEADER_SIZE, RecordBatch
from kseg.format.compression import DEFAULT_MAX_DECOMPRESSED
from kseg.format.errors import CorruptionError
from kseg.format.log import iter_entries
from kseg.format.magic import format_of
from kseg.format.resync import skip_from
from kseg.format.timestamps import MAX_MS, MIN_MS
from kseg.spark import fs, kernel_arrow
from kseg.spark.planning import Task
from kseg.storage.kernel_walk import last_offset_before, resync_scanner

ROWS_PER_BATCH = 8192
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
TIMESTAMP_TYPE_IDS = {"CreateTime": 0, "LogAppendTime": 1, "NoTimestampType": -1}

HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
KAFKA_FIELDS = [
    ("key", pa.binary()),
    ("value", pa.binary()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("timestamp", pa.timestamp("us", tz="UTC")),
    ("timestampType", pa.int32()),
]
SEGMENT_FIELDS = [
    ("segment", pa.string()),
    ("position", pa.int64()),
    ("magic", pa.int32()),
    ("compression", pa.string()),
    ("leader_epoch", pa.int32()),
    ("producer_id", pa.int64()),
    ("is_transactional", pa.bool_()),
    ("is_control", pa.bool_()),
]
BATCH_FIELDS = [
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("file", pa.string()),
    ("position", pa.int64()),
    ("base_offset", pa.int64()),
    ("last_offset", pa.int64()),
    ("count", pa.int32()),
    ("magic", pa.int32()),
    ("compression", pa.string()),
    ("crc", pa.int64()),
    ("crc_valid", pa.bool_()),
    ("size", pa.int32()),
    ("uncompressed_size", pa.int64()),
    ("timestamp_type", pa.string()),
    ("base_timestamp", pa.int64()),
    ("max_timestamp", pa.int64()),
    ("producer_id", pa.int64()),
    ("producer_epoch", pa.int32()),
    ("base_sequence", pa.int32()),
    ("partition_leader_epoch", pa.int32()),
    ("is_transactional", pa.bool_()),
    ("is_control", pa.bool_()),
    ("log_dir", pa.string()),  # the root (broker) it was read from: replicas stay apart
]


def records_schema(
    include_headers: bool,
    segment_columns: bool,
    schema_columns: bool = False,
    struct_type: pa.DataType | None = None,
) -> pa.Schema:
    """``schema_columns``: payload=schema's decoded columns (kseg.spark.schema_columns);
    ``struct_type``: valueStruct's column type after them."""
    fields = list(KAFKA_FIELDS)
    if include_headers:
        fields.append(("headers", HEADER_TYPE))
    if segment_columns:
        fields += SEGMENT_FIELDS
    if schema_columns:
        from kseg.spark.schema_columns import SCHEMA_FIELDS

        fields += SCHEMA_FIELDS
        if struct_type is not None:
            fields.append(("value_struct", struct_type))
    return pa.schema(fields)


BATCHES_SCHEMA = pa.schema(BATCH_FIELDS)
# batches mode with problems=true (`kseg spark stats`): two more columns, null on every batch
# row; a row holding only them (and topic, partition, file, log_dir) for each problem met
BATCHES_PROBLEMS_SCHEMA = pa.schema(
    BATCH_FIELDS + [("problem_kind", pa.string()), ("problem", pa.string())]
)
_LONGS = ("base_offset", "last_offset")


_log = logging.getLogger("kseg.spark")


def _warn(message: str) -> None:
    # The records table has Spark's fixed Kafka schema: no column can carry this. It goes to
    # the executor's log through logging (Python's last-resort handler writes WARNING to the
    # worker's stderr unless the application configures "kseg.spark"); the findings mode and
    # `kseg spark verify` report the same problems as rows.
    _log.warning("kseg: %s", message)


# what this worker process could not read, as messages: kseg.spark.parquet_out hands a task's
# to the driver (the job goes on without those rows; the export then says so and exits 8)
UNREADABLE: list[str] = []


def unreadable(task: Task, exc: OSError, *, warn: bool = True) -> str:
    """A segment that cannot be opened or read (gone since planning, not a regular file, an
    I/O or object-store error that outlived pyarrow's own retries): a warning naming it, and the
    job goes on without its rows (rows before the failure stay)."""
    at = getattr(exc, "position", None)
    where = f" at byte {at}" if isinstance(at, int) else ""
    reason = exc.strerror or str(exc)
    message = (
        f"{task.path}: unreadable{where}: {reason} (its records from byte {task.start} on are "
        "not in the result; `kseg spark verify` reports it)"
    )
    UNREADABLE.append(message)
    if warn:
        _warn(message)
    return message


def _entries(
    task: Task,
    decode=None,
    problems: list | None = None,
    resync: bool = False,
    validate: bool = True,
) -> Iterator:
    """The top-level entries that START inside the task's byte range, in order. ``decode``
    (kernel_arrow.spark_records) also yields the rows of the batches it decoded, with shift None.
    ``problems`` gets (kind, message) for what ends the walk: invalid data, or ``unreadable``.
    ``resync`` (the records mode's option): the walk goes on past damage inside the task's range
    (kseg.format.resync); each range skipped is a warning (``skipped``). ``validate`` False:
    a batch whose CRC fails is yielded too (the header walk's view: kseg.format.log)."""
    try:
        with fs.open_range(task.path, task.start, task.end) as (buf, shift):
            pos, end = task.start - shift, task.end - shift
            last = task.base_offset - 1  # entries a resync finds hold higher offsets
            doubt = False  # the last range skipped was ambiguous (as walk_resync tracks it)
            while True:
                try:
                    if decode is not None:
                        yield from decode(buf, pos, end, shift)
                        return
                    for entry in iter_entries(buf, pos, end, validate=validate, source=task.path):
                        yield entry, shift
                    return
                except CorruptionError as exc:
                    if resync:
                        last = last_offset_before(buf, pos, exc.position, last)
                        found, resumed = skip_from(
                            buf, exc, pos, end, last, scan=resync_scanner(),
                            after_ambiguous=doubt,
                        )  # fmt: skip
                        doubt = found.ambiguous
                        skipped(task, found, shift)
                        if resumed is not None:
                            pos = resumed
                            continue
                    elif problems is None:
                        _warn(f"{exc} (reading stops here; run `kseg verify` for every problem)")
                    else:  # the caller reports it (on the driver): not twice
                        problems.append((exc.kind, f"{exc} (counting of this segment stops here)"))
                    return
    except OSError as exc:
        message = unreadable(task, exc, warn=problems is None)
        if problems is not None:
            problems.append(("unreadable", message))


# the ranges this worker process skipped (the records mode's ``resync`` option), as messages
SKIPPED: list[str] = []


def skipped(task: Task, found, shift: int = 0) -> str:
    """A range of ``task``'s segment the resync skipped (kseg.format.resync.Skipped): no row, a
    warning naming the file, the byte range, the offsets it held and why (kept in ``SKIPPED``)."""
    from kseg.dump.error_events import skipped_event, skipped_message

    ev = skipped_event(found._replace(start=found.start + shift, end=found.end + shift), task.path)
    message = f"{task.path}: skipped {skipped_message(ev)} (resync: reading goes on after it)"
    SKIPPED.append(message)
    _warn(message)
    return message


def _tuples(entry, problems: list) -> Iterator[tuple]:
    """The entry's record tuples, streamed; a bad record ends them (after the good ones before
    it) and lands in ``problems``."""
    try:
        for chunk in entry.record_chunks():
            yield from chunk
    except CorruptionError as exc:
        yield from exc.records
        problems.append(exc.with_traceback(None))  # its frames would pin the decoder's buffers


def record_batches(
    task: Task,
    *,
    include_headers: bool = False,
    segment_columns: bool = False,
    include_control: bool = False,
    from_time: int | None = None,
    to_time: int | None = None,
    from_offset: int | None = None,
    to_offset: int | None = None,
    record_filter=None,
    resync: bool = False,
    committed: tuple | None = None,
) -> Iterator[pa.RecordBatch]:
    """``record_filter``: a kseg.dump.search.RecordFilter (rows of the records it keeps;
    control records never match; batches it rules out are not decoded). ``resync``: go on past
    damage (see ``_entries``). ``committed``: the partition's read_committed view as plain data
    (kseg.storage.isolation.Committed.to_data): only the batches it keeps (no control batch)."""
    keeps = None
    if committed is not None:
        from kseg.storage.isolation import Committed

        keeps = Committed.from_data(committed).keeps_entry
    schema = records_schema(include_headers, segment_columns)
    cols: dict[str, list] = {name: [] for name in schema.names}
    n = 0
    out_of_range = 0  # record timestamps no date can hold: null in the row, one warning a task
    decode = None if record_filter is not None or keeps is not None else kernel_arrow.spark_records(
        schema, topic=task.topic, partition=task.partition, path=task.path,
        include_headers=include_headers, segment_columns=segment_columns,
        include_control=include_control, from_time=from_time, to_time=to_time,
        from_offset=from_offset, to_offset=to_offset, rows=ROWS_PER_BATCH,
    )  # fmt: skip
    for entry, shift in _entries(task, decode, resync=resync):
        if shift is None:  # rows the compiled kernel decoded, in order: ours go out first
            if n:
                yield _to_batch(cols, schema)
                cols = {name: [] for name in schema.names}
                n = 0
            yield from entry
            continue
        if keeps is not None and not keeps(entry):
            continue
        is_v2 = isinstance(entry, RecordBatch)
        is_control = is_v2 and entry.is_control
        if is_control and not include_control:
            continue
        if (
            from_time is not None
            and entry.max_timestamp < from_time
            and format_of(entry.magic).timestamps
        ):
            continue
        if to_offset is not None and is_v2 and entry.base_offset > to_offset:
            break
        if from_offset is not None and entry.last_offset < from_offset:
            continue
        if record_filter is not None and (
            is_control or not record_filter.batch_may_match(entry, DEFAULT_MAX_DECOMPRESSED)
        ):
            continue
        problems: list[CorruptionError] = []
        for key, value, ts, headers, offset, _seq, ts_type in _tuples(entry, problems):
            if (from_time is not None and ts < from_time) or (to_time is not None and ts > to_time):
                continue
            if record_filter is not None and not record_filter.matches(key, value, headers):
                continue
            if (from_offset is not None and offset < from_offset) or (
                to_offset is not None and offset > to_offset
            ):
                continue
            cols["key"].append(key)
            cols["value"].append(value)
            cols["topic"].append(task.topic)
            cols["partition"].append(task.partition)
            if I64_MIN <= offset <= I64_MAX:
                cols["offset"].append(offset)
            else:  # base offset + delta past 2^63-1 (Kafka's long arithmetic would wrap)
                cols["offset"].append(None)
                if not out_of_range:
                    _warn(
                        f"{task.path}: a record of the batch at byte {entry.position + shift} has "
                        f"offset {offset}, past 2^63-1: null in the row"
                    )
                out_of_range += 1
            if MIN_MS <= ts <= MAX_MS:
                cols["timestamp"].append(ts * 1000)
            else:
                cols["timestamp"].append(None)
                if not out_of_range:
                    _warn(
                        f"{task.path}: record at offset {offset} (batch at byte "
                        f"{entry.position + shift}) has timestamp {ts} ms, outside the years "
                        "0001-9999 a timestamp column holds: null in the row"
                    )
                out_of_range += 1
            cols["timestampType"].append(TIMESTAMP_TYPE_IDS[ts_type])
            if include_headers:
                cols["headers"].append(list(headers) if headers else None)
            if segment_columns:
                cols["segment"].append(task.path)
                cols["position"].append(entry.position + shift)
                cols["magic"].append(entry.magic)
                cols["compression"].append(entry.compression)
                cols["leader_epoch"].append(entry.partition_leader_epoch)
                cols["producer_id"].append(entry.producer_id)
                cols["is_transactional"].append(entry.is_transactional)
                cols["is_control"].append(is_control)
            n += 1
            if n >= ROWS_PER_BATCH:
                yield _to_batch(cols, schema)
                cols = {name: [] for name in schema.names}
                n = 0
        if problems:
            _warn(f"{problems[0].in_file(task.path)} (records before it were read)")
            break
    if out_of_range > 1:
        _warn(f"{task.path}: {out_of_range} record timestamps or offsets out of range (null)")
    if n:
        yield _to_batch(cols, schema)


def kafka07_record_batches(
    task: Task,
    *,
    include_headers: bool = False,
    segment_columns: bool = False,
    from_offset: int | None = None,
    to_offset: int | None = None,
    from_time: int | None = None,
    to_time: int | None = None,
    record_filter=None,
) -> Iterator[pa.RecordBatch]:
    """Rows of a Kafka 0.7 `.kafka` segment (a "kafka07" task: the whole file): one per message
    a consumer receives; ``offset`` = the byte offset of the entry holding it (a compressed
    wrapper's inner messages share it), ``key`` and ``timestamp`` null (0.7 has neither),
    ``timestampType`` -1. A bad entry ends the task with a warning (``kseg verify`` says more).
    A time window (fromTime/toTime) selects nothing: no 0.7 message has a timestamp."""
    from kseg.format import kafka07 as k7

    if from_time is not None or to_time is not None:
        return

    schema = records_schema(include_headers, segment_columns)
    cols: dict[str, list] = {name: [] for name in schema.names}
    n = 0
    from kseg.storage.mapped import mapped

    shift = 0  # the on-demand reader keeps absolute positions (as fs.open_range's)
    try:
        with mapped(task.path, sequential=True) as buf:
            try:
                for e in k7.entries(
                    buf, task.start - shift, task.end - shift, base=task.base_offset + shift,
                    source=task.path,
                ):  # fmt: skip
                    if to_offset is not None and e.offset > to_offset:
                        break
                    if from_offset is not None and e.offset < from_offset:
                        continue
                    if e.is_compressed:
                        payloads = [m.payload for m in k7.inner_messages(e)]
                    else:
                        with e.payload() as view:
                            payloads = [bytes(view)]
                    for value in payloads:
                        if record_filter is not None and not record_filter.matches(None, value, ()):
                            continue  # a 0.7 message: a value, no key, no headers
                        cols["key"].append(None)
                        cols["value"].append(value)
                        cols["topic"].append(task.topic)
                        cols["partition"].append(task.partition)
                        cols["offset"].append(e.offset)
                        cols["timestamp"].append(None)
                        cols["timestampType"].append(TIMESTAMP_TYPE_IDS["NoTimestampType"])
                        if include_headers:
                            cols["headers"].append(None)
                        if segment_columns:
                            cols["segment"].append(task.path)
                            cols["position"].append(e.position + shift)
                            cols["magic"].append(e.magic)
                            cols["compression"].append(e.compression)
                            cols["leader_epoch"].append(-1)
                            cols["producer_id"].append(-1)
                            cols["is_transactional"].append(False)
                            cols["is_control"].append(False)
                        n += 1
                        if n >= ROWS_PER_BATCH:
                            yield _to_batch(cols, schema)
                            cols = {name: [] for name in schema.names}
                            n = 0
            except CorruptionError as exc:
                _warn(f"{exc} (reading stops here; run `kseg verify` for every problem)")
    except OSError as exc:
        unreadable(task, exc)
    if n:
        yield _to_batch(cols, schema)


def batch_rows(
    task: Task,
    *,
    compute_uncompressed: bool = False,
    problems: bool = False,
    bad_crc: bool = False,
) -> Iterator[pa.RecordBatch]:
    """The batches view of the task's range. ``problems``: also a row per problem met (what
    ends the walk, a batch whose records do not decompress), as `kseg stats` reports them.
    ``bad_crc``: a batch whose CRC fails is a row (crc_valid false) and the walk goes on, as
    the header walk does (kseg replicas compares such batches); else the walk stops there."""
    from kseg.dump.batch_events import batch_event

    schema = BATCHES_PROBLEMS_SCHEMA if problems else BATCHES_SCHEMA
    cols: dict[str, list] = {name: [] for name in schema.names}
    met: list[tuple[str, str]] = []
    n = 0
    for entry, shift in _entries(task, problems=met if problems else None, validate=not bad_crc):
        ev = batch_event(entry, task.path)
        ev["position"] += shift
        if not isinstance(entry, RecordBatch) and (compute_uncompressed or not entry.is_compressed):
            # as dump --batches-only: a wrapper's first offset and count need decompression
            try:
                ev["base_offset"], ev["count"] = entry.base_offset, entry.records_count
            except CorruptionError:
                pass
        size_out = None
        if compute_uncompressed:
            size_out = (
                ev["size"]
                if ev["compression"] == "none"
                else _uncompressed(entry, met if problems else None, task.path)
            )
        row = {
            **ev,
            "topic": task.topic,
            "partition": task.partition,
            "uncompressed_size": size_out,
            "log_dir": task.log_dir,
            "problem_kind": None,
            "problem": None,
        }
        for name in _LONGS:  # last_offset = base + delta can pass 2^63-1
            v = row[name]
            if v is not None and not I64_MIN <= v <= I64_MAX:
                _warn(f"{task.path}: batch at byte {row['position']}: {name} {v} past 2^63-1: null")
                row[name] = None
        for name in schema.names:
            cols[name].append(row[name])
        n += 1
        if n >= ROWS_PER_BATCH:
            yield _to_batch(cols, schema)
            cols = {name: [] for name in schema.names}
            n = 0
    if problems:
        for kind, message in met:
            fixed = {"topic": task.topic, "partition": task.partition, "file": task.path}
            fixed |= {"log_dir": task.log_dir, "problem_kind": kind, "problem": message}
            for name in schema.names:
                cols[name].append(fixed.get(name))
            n += 1
    if n:
        yield _to_batch(cols, schema)


def _uncompressed(entry, problems: list | None = None, path: str = "") -> int | None:
    from kseg.format import compression

    try:
        if isinstance(entry, RecordBatch):
            start, end = entry.position + HEADER_SIZE, entry.position + entry.size
            with memoryview(entry.buf) as mv:
                return HEADER_SIZE + len(
                    compression.decompress(entry.compression_id, mv[start:end])
                )
        _, value = entry.key_value()
        if value is None:
            return None  # a wrapper without a value (inner_summary reports it)
        return entry.size - len(value) + entry.decompressed_size()
    except CorruptionError as exc:
        if problems is not None:  # as `kseg stats`: invalid content, counting goes on
            if exc.position is None:
                exc.position = entry.position
            problems.append((exc.kind, str(exc.in_file(path))))
        return None


def _to_batch(cols: dict[str, list], schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(cols[f.name], type=f.type) for f in schema], schema=schema
    )
