"""The compiled kernel or the pure-Python core, for the hot loops: the one place that imports
``kseg._kernel`` (built from kernel/ by ``pip install .`` when a Rust toolchain is there).

``KSEG_KERNEL=rust`` forces the kernel (an error when it is not built), ``KSEG_KERNEL=python``
the pure-Python core; unset (or ``auto``): the kernel when it imports, else Python.

The kernel only does the common case, exactly as the core does it, and says where it stopped:
every rule and every error message stays in kseg.format. The functions here splice the two, so
a caller sees the core's contract (same values, same CorruptionError at the same position)
whichever runs. Nothing here is imported by a command that does not use it.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

from kseg.format.entry import LOG_OVERHEAD, SIZE_POS
from kseg.format.errors import KsegError

ENV = "KSEG_KERNEL"
RUST = "rust"
PYTHON = "python"

ROW = struct.Struct("=11q")  # one walk row, as the kernel packs it (native int64)
_CHUNK_BATCHES = 4096  # rows per kernel call: bounds the rows buffer (352 KiB)
_WINDOW = 64 << 20  # bytes per kernel call: lets the walk drop passed pages of a map in between
_STOP_OTHER = 2
_READ_WINDOW = 8 << 20  # bytes made readable per kernel call on a buffer read on demand

_UNSET = object()
_module = _UNSET


class KernelUnavailable(KsegError):
    """KSEG_KERNEL asks for something that is not there (or is not a known choice): the
    user's setting, so a command exits 16 with this one line (kseg.outcome: a usage mistake)."""

    kind = "usage"  # kseg.outcome: a command reports it in one line and exits 16


def _load():
    choice = os.environ.get(ENV, "").strip().lower()
    if choice == PYTHON:
        return None
    if choice not in ("", "auto", RUST):
        raise KernelUnavailable(f"{ENV}={choice!r} is not one of: rust, python, auto")
    try:
        from kseg import _kernel
    except ImportError as exc:
        if choice == RUST:
            raise KernelUnavailable(
                f"{ENV}=rust but the compiled kernel is not built ({exc}): reinstall kseg with a "
                "Rust toolchain on PATH (pip install .), or unset KSEG_KERNEL to use pure Python"
            ) from None
        return None
    return _kernel


def compiled():
    """The compiled module, or None when the pure-Python core is active (decided once)."""
    global _module
    if _module is _UNSET:
        _module = _load()
    return _module


def reset() -> None:
    """Decide again from the environment (tests switch KSEG_KERNEL)."""
    global _module
    _module = _UNSET


def active() -> str:
    """ "rust" or "python": which implementation runs the hot loops."""
    return PYTHON if compiled() is None else RUST


def describe() -> str:
    """One line for ``kseg --version``: which kernel is active and why."""
    k = compiled()
    if k is not None:
        return f"kernel: rust (kseg._kernel {k.VERSION})"
    if os.environ.get(ENV, "").strip().lower() == PYTHON:
        return f"kernel: python ({ENV}=python)"
    return "kernel: python (the compiled kernel is not built)"


# --- the header walk ------------------------------------------------------------------------


def walk_blocks(buf, start: int = 0, end: int | None = None) -> Iterator[bytes]:
    """kseg.format.log.walk_headers as blocks of packed rows (``ROW``, one per entry, the
    tuple's values with crc_ok as 0/1): no Python object per batch on the kernel's path.

    Raises the core's CorruptionError at the core's position, after yielding every row before
    it. The kernel walks plain valid v2 batches; any other entry (legacy, bad CRC, torn, a lie)
    is handed to the core's walk for that one entry, then the kernel carries on after it.
    """
    from kseg.format.log import _Behind, walk_headers

    if end is None:
        end = len(buf)
    k = compiled()
    if k is None:
        pack = ROW.pack
        block: list[bytes] = []
        for row in walk_headers(buf, start, end):
            block.append(pack(*row))
            if len(block) >= _CHUNK_BATCHES:
                yield b"".join(block)
                block = []
        if block:
            yield b"".join(block)
        return
    behind = _Behind(buf, start)
    ensure = getattr(buf, "ensure", None)  # a buffer read on demand (storage.mapped.ShadowMap)
    walk = k.walk
    pos = start
    while pos < end:
        if pos >= behind.next:
            behind.passed(pos)
        window = min(end, pos + _WINDOW)
        if ensure is not None:  # read on demand: as much at a time as the core's walk holds
            window = min(window, ensure(pos, min(window, pos + _READ_WINDOW)))
        rows, stop, reason = walk(buf, pos, window, _CHUNK_BATCHES)
        if rows:
            yield rows
        pos = stop
        if reason == _STOP_OTHER:
            # the core walks this one entry: it yields its row or raises its error
            row = next(walk_headers(buf, pos, end))
            yield ROW.pack(*row)
            pos += row[1]


def walk_window(buf, pos: int, window: int) -> tuple[bytes, int, bool]:
    """One call of the kernel's header walk (the kernel must be active): the packed ``ROW``
    rows of the plain valid v2 batches from ``pos`` within ``buf[:window]`` (CRC-checked), the
    position it stopped at, and whether the core must take the entry there (anything but a
    plain valid v2 batch). Used by dump's record search to pass over batches without a Python
    object each."""
    rows, stop, reason = compiled().walk(buf, pos, window, _CHUNK_BATCHES)
    return rows, stop, reason == _STOP_OTHER


def walk_headers(buf, start: int = 0, end: int | None = None) -> Iterator[tuple]:
    """Exactly kseg.format.log.walk_headers (same tuples, same errors), on the kernel if active."""
    if compiled() is None:
        from kseg.format.log import walk_headers as core

        yield from core(buf, start, end)
        return
    unpack = ROW.iter_unpack
    for block in walk_blocks(buf, start, end):
        for r in unpack(block):
            yield r[:9] + (r[9] == 1,) + r[10:]


# --- Kafka's index-append rule --------------------------------------------------------------


def index_add(builder, block: bytes) -> None:
    """``builder.add(last_offset, max_timestamp, size)`` (kseg.format.index_rule.IndexBuilder)
    for every row of a walk block, in the kernel when active."""
    k = compiled()
    view = memoryview(block)
    if k is None:
        for r in ROW.iter_unpack(view):
            builder.add(r[4], r[5], r[1])
        return
    while len(view):
        state = (
            builder.base_offset,
            builder.index_interval_bytes,
            builder.valid_bytes,
            builder._last_entry_pos,
            builder._last_index_offset,
            builder._last_time_ts,
            builder.max_timestamp,
            builder.max_timestamp_offset,
        )
        consumed, state, off, time = k.index_add(view, state)
        builder.offset_index += off
        builder.time_index += time
        (
            _,
            _,
            builder.valid_bytes,
            builder._last_entry_pos,
            builder._last_index_offset,
            builder._last_time_ts,
            builder.max_timestamp,
            builder.max_timestamp_offset,
        ) = state
        view = view[consumed * ROW.size :]
        if len(view):  # a row outside the kernel's int range: the core adds it (or raises)
            r = ROW.unpack_from(view)
            builder.add(r[4], r[5], r[1])
            view = view[ROW.size :]


def plain_runner():
    """The kernel's ``plain_run(rows, base_offset, prev_last, want_epoch, epoch_next,
    stop_at_producer) -> (n, last_offset, max_timestamp)`` — how many leading rows of a walk
    block need no look from verify's per-batch checks — or None when the core is active."""
    k = compiled()
    return None if k is None else k.plain_run


# --- records -> JSON Lines -----------------------------------------------------------------


def json_modes() -> tuple[str, ...]:
    """The payload modes the kernel renders (others always take the core's path)."""
    k = compiled()
    return () if k is None else tuple(k.MODES)


def batch_json(buf, position: int, file_json: bytes, mode: str) -> bytes | None:
    """The JSON lines of every record of the uncompressed v2 batch at ``position`` — byte for
    byte kseg.dump.dump.record_json_maker's — or None: the caller then takes the core's path
    (kernel not active, a mode it does not render, a compressed batch, or any problem in the
    records, which the core reports with its message). ``file_json``: orjson.dumps(file name)."""
    k = compiled()
    if k is None or mode not in k.MODES:
        return None
    ensure = getattr(buf, "ensure", None)  # a buffer read on demand: make the batch readable
    if ensure is not None:
        if ensure(position, position + LOG_OVERHEAD) < position + LOG_OVERHEAD:
            return None
        size = LOG_OVERHEAD + int.from_bytes(
            buf[position + SIZE_POS : position + LOG_OVERHEAD], "big", signed=True
        )
        ensure(position, position + max(size, LOG_OVERHEAD))
    return k.batch_json(buf, position, file_json, mode)


def records_json(
    data,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    base_sequence: int,
    file_json: bytes,
    mode: str,
) -> bytes | None:
    """The same for records the core has already decompressed (``data`` holds exactly the
    records; ``base_sequence`` the batch's). None: use the core."""
    k = compiled()
    if k is None or mode not in k.MODES:
        return None
    try:
        return k.records_json(
            data, count, base_offset, base_timestamp, log_append_time, base_sequence,
            file_json, mode,
        )  # fmt: skip
    except OverflowError:  # a header field outside int64 cannot come from a real batch
        return None


# --- kseg dump -f json: a file's record lines, one batch at a time ----------------------------

JSON_PART = 4 << 20  # bytes of lines per kernel call: bounds memory whatever the batch's size
# JsonRecords.run: a window of the file per call (a buffer read on demand: READ_WINDOW of it)
RUN_WINDOW = _WINDOW
READ_WINDOW = _READ_WINDOW
RUN_END, RUN_FULL, RUN_OTHER, RUN_LIMIT = 0, 1, 2, 3  # why a run returned (kernel/src/json_run.rs)


def json_records(
    file_json: bytes,
    mode: str,
    from_offset: int | None = None,
    to_offset: int | None = None,
    from_time: int | None = None,
    to_time: int | None = None,
):
    """A ``kseg._kernel.JsonRecords`` for one file's record lines (``file_json``: the file name
    and partition tags as record_json_maker places them), or None (kernel not active, a mode it
    does not render, a bound outside int64): the caller then takes the core's path.

    Its ``render(data, start, end, count, base_offset, base_timestamp, log_append_time,
    base_sequence, done, validated, max_records, max_out)`` gives the JSON lines of one v2
    batch's records in ``data[start:end]`` that --from/--to-offset, --from/--to-time and
    --limit select, exactly as kseg.dump.dump._entry_events shows them, as
    ``(lines, next_start, next_done, emitted, lo, hi)``, at most about ``max_out`` bytes of
    lines per call (next_start >= 0: call again from there with validated=True); or None when
    the records are not all valid: the core then takes the whole batch and reports it.

    Its ``run(buf, start, end, batch_file, batch_tail, max_records, max_out, batches_only)``
    takes a run of plain batches whole — each batch's line (``batch_file``: the file name as JSON,
    ``batch_tail``: the partition tags, ``,"key":value``...) and its record lines, with the same
    selection and a batch-level skip or end as kseg.dump.dump._dump_log — as ``(lines, stop,
    reason, emitted, lo, hi)``, ``lines`` a ``kseg._kernel.Lines`` (see lines_type): reason RUN_END (reached ``end``), RUN_FULL (about ``max_out``
    bytes: call again from ``stop``), RUN_OTHER (the core takes the entry at ``stop``: anything
    but an uncompressed, non-control v2 batch with a matching CRC and valid records that fits a
    part), RUN_LIMIT (``max_records`` shown). ``batches_only``: batch lines only (--batches-only;
    compressed and control batches too), ``max_records`` and ``emitted`` counting batches."""
    k = compiled()
    if k is None or mode not in k.MODES:
        return None
    bounds = (from_offset, to_offset, from_time, to_time)
    if any(b is not None and not _I64[0] <= b <= _I64[1] for b in bounds):
        return None
    return k.JsonRecords(file_json, mode, *bounds)


def lines_type() -> type | None:
    """The type of the lines a JsonRecords ``run`` returns (``kseg._kernel.Lines``: ``len``,
    ``bytes(lines)``, and ``write_stdout()``, which writes them to descriptor 1 from the
    kernel's buffer and empties them), or None while no kernel is loaded: none can exist then,
    so this never loads it (nor decides KSEG_KERNEL) itself."""
    k = _module
    return None if k is _UNSET or k is None else k.Lines


# --- records -> Arrow (the Spark source's decoder) ---------------------------------------------

_STOP_END, _STOP_FULL, _STOP_COMPRESSED, _STOP_DONE = 0, 1, 3, 4
_I64 = (-(1 << 63), (1 << 63) - 1)


def spark_records(
    schema,
    *,
    topic: str,
    partition: int | None,
    path: str,
    include_headers: bool,
    segment_columns: bool,
    include_control: bool,
    from_time: int | None,
    to_time: int | None,
    from_offset: int | None,
    to_offset: int | None,
    rows: int,
):
    """The kernel's side of kseg.spark.arrow.record_batches, or None (kernel not active, or a
    bound outside int64): the caller then takes its pure-Python path for the whole task.

    Returns ``decode(buf, start, end, shift)``, an iterator standing in for the walk over the
    entries starting in ``buf[start:end]``: it yields ``(entry, shift)`` for each entry the
    Python decoder must handle itself (anything but a valid v2 batch the kernel decodes whole:
    legacy, a bad CRC, a lie in the records, a value that becomes null with a warning; a torn
    or bad entry raises the core's CorruptionError, as kseg.format.log.iter_entries does), and
    ``(batches, None)`` for the rows the kernel decoded from the batches before it: a list of
    pyarrow RecordBatches of ``schema``, at most ``rows`` rows each, equal to the Python path's
    rows. Compressed batches are decompressed by the core's bounded codecs, their records
    decoded by the kernel.
    """
    k = compiled()
    if k is None:
        return None
    bounds = (from_time, to_time, from_offset, to_offset)
    if any(b is not None and not _I64[0] <= b <= _I64[1] for b in bounds):
        return None
    import pyarrow as pa

    from kseg.format import compression as codecs
    from kseg.format.batch import ATTR_COMPRESSION, HEADER_SIZE, RecordBatch
    from kseg.format.errors import CorruptionError
    from kseg.format.log import _Behind, iter_entries
    from kseg.format.timestamps import MAX_MS, MIN_MS

    names = [codecs.codec_name(cid).encode() for cid in range(ATTR_COMPRESSION + 1)]

    def assemble(out: dict, n: int) -> list:
        arrays = []
        for field in schema:
            name = field.name
            if name == "topic":
                arrays.append(pa.repeat(pa.scalar(topic, pa.string()), n))
            elif name == "partition":
                arrays.append(pa.repeat(pa.scalar(partition, pa.int32()), n))
            elif name == "segment":
                arrays.append(pa.repeat(pa.scalar(path, pa.string()), n))
            elif name == "headers":
                valid, offsets, nulls = out["headers"]
                entries = pa.Array.from_buffers(
                    field.type.value_type,
                    offsets_len(out["headers.key"]),
                    [None],
                    children=[
                        _binary(pa, pa.string(), out["headers.key"]),
                        _binary(pa, pa.binary(), out["headers.value"]),
                    ],
                )
                arrays.append(
                    pa.Array.from_buffers(
                        field.type,
                        n,
                        [_buf(pa, valid), _buf(pa, offsets)],
                        null_count=nulls,
                        children=[entries],
                    )
                )
            else:
                got = out[name]
                if isinstance(got, tuple):  # binary/string: validity, offsets, data, nulls
                    arrays.append(_binary(pa, field.type, got))
                else:  # fixed width (boolean: a bitmap), no nulls
                    arrays.append(pa.Array.from_buffers(field.type, n, [None, _buf(pa, got)]))
        batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
        return [batch.slice(i, rows) for i in range(0, n, rows)]

    def decode(buf, start: int, end: int, shift: int):
        rec = k.Records(
            include_headers, segment_columns, include_control, from_time, to_time,
            from_offset, to_offset, shift, MIN_MS, MAX_MS, names,
        )  # fmt: skip

        def take() -> tuple:
            out = rec.take()
            return assemble(out, out["rows"]), None

        behind = _Behind(buf, start)
        ensure = getattr(buf, "ensure", None)  # a buffer read on demand (storage.mapped)
        pos = start
        while pos < end:
            if pos >= behind.next:
                behind.passed(pos)
            window = min(end, pos + _WINDOW)
            if ensure is not None:
                window = min(window, ensure(pos, window))
            before = pos
            pos, reason = rec.walk(buf, pos, window, rows)
            if reason == _STOP_END and pos > before:
                continue  # the next window
            if reason == _STOP_FULL:
                yield take()
                continue
            if reason == _STOP_DONE:
                break
            if reason == _STOP_COMPRESSED:
                batch = RecordBatch(buf, pos)
                try:
                    with memoryview(buf) as mv:
                        data = codecs.decompress(
                            batch.compression_id, mv[pos + HEADER_SIZE : pos + batch.size]
                        )
                except CorruptionError:
                    data = None  # the Python decoder reports it
                if data is not None and rec.decompressed(buf, pos, data):
                    pos += batch.size
                    continue
            # the core takes this one entry (or raises its error), then the kernel goes on
            if rec.rows:
                yield take()
            entry = next(iter_entries(buf, pos, end, validate=True, source=path))
            yield entry, shift
            pos += entry.size
        if rec.rows:
            yield take()

    return decode


def offsets_len(binary: tuple) -> int:
    """Values in a (validity, offsets, data, nulls) binary column from Records.take()."""
    return binary[1].size // 4 - 1


def _buf(pa, b):
    return None if b is None else pa.foreign_buffer(b.address, b.size, base=b)


def _binary(pa, type_, col: tuple):
    valid, offsets, data, nulls = col
    return pa.Array.from_buffers(
        type_, offsets_len(col), [_buf(pa, valid), _buf(pa, offsets), _buf(pa, data)],
        null_count=nulls,
    )  # fmt: skip
