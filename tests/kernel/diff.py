"""Both paths over one buffer, for the differential tests, the fuzz script and the benchmarks:
the pure-Python core (kseg.format, kseg.dump) and the compiled kernel (kseg._kernel)."""

from __future__ import annotations

import importlib.util
import struct

import orjson

from kseg.format import compression as codecs
from kseg.format.batch import ATTR_TIMESTAMP_TYPE, HEADER_SIZE, RecordBatch
from kseg.format.errors import CorruptionError
from kseg.format.log import walk_headers
from kseg.render.dump_json import record_json_maker

KERNEL_MODES = ("auto", "utf8", "hex", "base64", "redact")
ROW = struct.Struct("=11q")


def kernel_built() -> bool:
    return importlib.util.find_spec("kseg._kernel") is not None


def core_walk(buf) -> tuple[list[tuple], tuple | None]:
    """Every walk_headers tuple, and the error it stops with (position, kind, message)."""
    rows: list[tuple] = []
    try:
        for row in walk_headers(buf):
            rows.append(row)
    except CorruptionError as exc:
        return rows, (exc.position, exc.kind, exc.message, exc.field)
    return rows, None


def spliced_walk(buf) -> tuple[list[tuple], tuple | None]:
    """The same through kseg.storage.kernel_walk.walk_headers (kernel + core for what the kernel
    leaves)."""
    from kseg.storage import kernel_walk

    rows: list[tuple] = []
    try:
        for row in kernel_walk.walk_headers(buf):
            rows.append(row)
    except CorruptionError as exc:
        return rows, (exc.position, exc.kind, exc.message, exc.field)
    return rows, None


def check_raw_walk(buf, k) -> None:
    """The bare kernel walk from every position the core reaches: its rows are the core's plain
    valid v2 rows, and it stops exactly at the first entry that is anything else."""
    rows, error = core_walk(buf)
    starts = [0] + [r[0] + r[1] for r in rows]
    for i, start in enumerate(starts):
        got_raw, stop, reason = k.walk(buf, start, len(buf), 1 << 30)
        got = [r[:9] + (r[9] == 1,) + r[10:] for r in ROW.iter_unpack(got_raw)]
        expected = []
        for r in rows[i:]:
            if r[2] != 2 or not r[9]:
                break
            expected.append(r)
        assert got == expected, f"kernel rows from byte {start}"
        n = i + len(expected)
        if n < len(rows):  # the core yields a row the kernel leaves to it (legacy, bad CRC)
            assert (stop, reason) == (rows[n][0], 2)
        elif error is not None:  # the core raises here: the kernel stops at the same byte
            assert (stop, reason) == (error[0], 2), error
        else:
            assert (stop, reason) == (len(buf), 0)


def core_json(buf, pos: int, name: str, mode: str) -> bytes | None:
    """The core's JSON lines of the v2 batch at ``pos``, or None where it raises."""
    make = record_json_maker(name, mode)
    try:
        # a line of many headers comes as a StreamedLine (its pieces): joined here
        lines = (make(t) for t in RecordBatch(buf, pos).record_tuples())
        return b"".join(x if isinstance(x, bytes) else b"".join(x) for x in lines)
    except CorruptionError:
        return None


def kernel_json(buf, pos: int, name: str, mode: str, k) -> bytes | None:
    """The kernel's: batch_json for an uncompressed batch; a compressed one is decompressed by
    the core's bounded codecs and its records handed in."""
    file_json = orjson.dumps(name)
    batch = RecordBatch(buf, pos)
    if batch.compression_id == codecs.NONE:
        return k.batch_json(buf, pos, file_json, mode)
    start, end = pos + HEADER_SIZE, pos + batch.size
    try:
        data = codecs.decompress(batch.compression_id, memoryview(buf)[start:end])
    except CorruptionError:
        return None
    return k.records_json(
        data,
        batch.records_count,
        batch.base_offset,
        batch.base_timestamp,
        batch.max_timestamp if batch.attributes & ATTR_TIMESTAMP_TYPE else None,
        batch.base_sequence,
        file_json,
        mode,
    )


def v2_positions(buf) -> list[int]:
    """Positions of the v2 entries the core walk reaches (CRC good or not)."""
    rows, _ = core_walk(buf)
    return [r[0] for r in rows if r[2] == 2]


def check_json(buf, name: str, k, modes=KERNEL_MODES) -> int:
    """Kernel JSON == core JSON for every v2 batch and mode (both None where the core raises).
    Returns how many batches the kernel rendered."""
    rendered = 0
    for pos in v2_positions(buf):
        for mode in modes:
            expected = core_json(buf, pos, name, mode)
            got = kernel_json(buf, pos, name, mode, k)
            assert got == expected, f"{name} batch at {pos}, --payload {mode}"
            rendered += got is not None
    return rendered


# --- records -> Arrow (kseg.spark.arrow.record_batches) ---------------------------------------

ARROW_OPTIONS = (
    {},
    {"include_headers": True, "segment_columns": True, "include_control": True},
    {"include_headers": True, "from_offset": 3, "to_offset": 40},
    {"segment_columns": True, "from_time": 1_700_000_000_100, "to_time": 1_800_000_000_000},
)


def arrow_run(task, choice: str, **options):
    """record_batches(task) with KSEG_KERNEL=choice: (table, its warnings (logger
    "kseg.spark", one line each), batch sizes)."""
    import logging
    import os

    import pyarrow as pa

    from kseg import kernel
    from kseg.spark.arrow import record_batches, records_schema

    before = os.environ.get("KSEG_KERNEL")
    os.environ["KSEG_KERNEL"] = choice
    kernel.reset()
    warnings: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warnings.append(f"{record.levelname} {record.getMessage()}\n")

    logger, handler = logging.getLogger("kseg.spark"), Keep()
    logger.addHandler(handler)
    try:
        batches = list(record_batches(task, **options))
    finally:
        logger.removeHandler(handler)
        if before is None:
            del os.environ["KSEG_KERNEL"]
        else:
            os.environ["KSEG_KERNEL"] = before
        kernel.reset()
    schema = records_schema(
        options.get("include_headers", False), options.get("segment_columns", False)
    )
    for b in batches:
        assert b.schema == schema
    return (
        pa.Table.from_batches(batches, schema=schema),
        "".join(warnings),
        [len(b) for b in batches],
    )


def kernel_arrow_rows(task, **options) -> int:
    """How many rows the kernel itself decoded for the task (the rest is the core's)."""
    from kseg.spark import fs, kernel_arrow
    from kseg.spark.arrow import ROWS_PER_BATCH, records_schema

    decode = kernel_arrow.spark_records(
        records_schema(
            options.get("include_headers", False), options.get("segment_columns", False)
        ),
        topic=task.topic,
        partition=task.partition,
        path=task.path,
        rows=ROWS_PER_BATCH,
        **{
            name: options.get(name) for name in ("from_time", "to_time", "from_offset", "to_offset")
        },
        **{
            name: options.get(name, False)
            for name in ("include_headers", "segment_columns", "include_control")
        },
    )
    n = 0
    with fs.open_range(task.path, task.start, task.end) as (buf, shift):
        try:
            for item, s in decode(buf, task.start - shift, task.end - shift, shift):
                if s is None:
                    n += sum(len(b) for b in item)
        except CorruptionError:
            pass
    return n


def check_arrow(task, options=ARROW_OPTIONS) -> int:
    """Both paths give equal tables and the same warnings, every batch within ROWS_PER_BATCH.
    Returns the rows the kernel decoded itself (over all the option sets)."""
    from kseg.spark.arrow import ROWS_PER_BATCH

    decoded = 0
    for opts in options:
        expected, expected_err, _ = arrow_run(task, "python", **opts)
        got, got_err, sizes = arrow_run(task, "rust", **opts)
        assert got.equals(expected), (task, opts)
        assert got_err == expected_err, (task, opts)
        assert all(0 < s <= ROWS_PER_BATCH for s in sizes), sizes
        decoded += kernel_arrow_rows(task, **opts)
    return decoded


def check_codecs(data: bytes, k, limit: int = 1 << 20) -> int:
    """``data`` as each codec's payload through the kernel's codecs (kernel/src/codecs.rs) and
    the core's: whenever the kernel gives bytes, the core gives the same without an error.
    Returns how many codecs the kernel decoded it with."""
    decoded = 0
    for cid in (codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD):
        got = k.decompress(cid, data, limit)
        if got is not None:
            assert codecs.decompress(cid, data, limit) == got, (cid, data[:40])
            decoded += 1
    return decoded


# --- kseg dump -f json over a whole file (runs of batches in the kernel) ----------------------

DUMP_OPTIONS = (
    {},
    {"limit": 7},
    {"from_offset": 3, "to_offset": 40, "max_bytes": 3000},
    {"from_time": 1_700_000_000_100, "to_time": 1_800_000_000_000, "limit": 50},
)


def dump_run(path, choice: str, mode: str, **options) -> bytes:
    """kseg.dump's JSON Lines for one file with KSEG_KERNEL=choice, as the CLI writes
    them (error events included)."""
    import io
    import os

    from kseg import kernel
    from kseg.dump.options import DumpOptions
    from kseg.dump.plan import dump_chunks
    from kseg.render.dump_json import JSON_LINES
    from kseg.render.json import write_json_chunks

    before = os.environ.get("KSEG_KERNEL")
    os.environ["KSEG_KERNEL"] = choice
    kernel.reset()
    out = io.BytesIO()
    try:
        opts = DumpOptions(payload=mode, json_lines=JSON_LINES, **options)
        for _ in write_json_chunks(dump_chunks([path], opts), out):
            pass
    finally:
        if before is None:
            del os.environ["KSEG_KERNEL"]
        else:
            os.environ["KSEG_KERNEL"] = before
        kernel.reset()
    return out.getvalue()


def check_dump(path, mode: str, options=DUMP_OPTIONS) -> int:
    """Both paths print the same bytes for the file, with and without --batches-only; returns
    the record lines printed."""
    n = 0
    for opts in options:
        for batches_only in (False, True):
            expected = dump_run(path, "python", mode, batches_only=batches_only, **opts)
            got = dump_run(path, "rust", mode, batches_only=batches_only, **opts)
            assert got == expected, (path, mode, opts, batches_only)
            n += expected.count(b'{"type":"record"')
    return n
