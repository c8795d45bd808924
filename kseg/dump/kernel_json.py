"""`kseg dump -f json` on the compiled kernel: a batch's record lines, and runs of plain batches
(batch lines and record lines), byte for byte what the core's dump prints. Every function gives
None (or stops and says where) for anything the kernel does not render: the caller then takes
the core's path, which keeps every rule and message.
"""

from __future__ import annotations

from kseg import kernel
from kseg.format.entry import LOG_OVERHEAD, SIZE_POS
from kseg.storage import kernel_walk

# --- records -> JSON Lines -----------------------------------------------------------------


def json_modes() -> tuple[str, ...]:
    """The payload modes the kernel renders (others always take the core's path)."""
    k = kernel.compiled()
    return () if k is None else tuple(k.MODES)


def batch_json(buf, position: int, file_json: bytes, mode: str) -> bytes | None:
    """The JSON lines of every record of the uncompressed v2 batch at ``position`` — byte for
    byte kseg.render.dump_json.record_json_maker's — or None: the caller then takes the core's path
    (kernel not active, a mode it does not render, a compressed batch, or any problem in the
    records, which the core reports with its message). ``file_json``: orjson.dumps(file name)."""
    k = kernel.compiled()
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
    k = kernel.compiled()
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
RUN_WINDOW = kernel_walk.WINDOW
READ_WINDOW = kernel_walk.READ_WINDOW
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
    --limit select, exactly as kseg.dump.batch_events.entry_events shows them, as
    ``(lines, next_start, next_done, emitted, lo, hi)``, at most about ``max_out`` bytes of
    lines per call (next_start >= 0: call again from there with validated=True); or None when
    the records are not all valid: the core then takes the whole batch and reports it.

    Its ``run(buf, start, end, batch_file, batch_tail, max_records, max_out, batches_only)``
    takes a run of plain batches whole — each batch's line (``batch_file``: the file name as JSON,
    ``batch_tail``: the partition tags, ``,"key":value``...) and its record lines, with the same
    selection and a batch-level skip or end as kseg.dump.log_events.dump_log — as ``(lines, stop,
    reason, emitted, lo, hi)``, ``lines`` a ``kseg._kernel.Lines`` (see kseg.kernel.lines_type):
    reason RUN_END (reached ``end``), RUN_FULL (about ``max_out`` bytes: call again from
    ``stop``), RUN_OTHER (the core takes the entry at ``stop``: anything but an uncompressed,
    non-control v2 batch with a matching CRC and valid records that fits a part), RUN_LIMIT
    (``max_records`` shown). ``batches_only``: batch lines only (--batches-only;
    compressed and control batches too), ``max_records`` and ``emitted`` counting batches."""
    k = kernel.compiled()
    if k is None or mode not in k.MODES:
        return None
    bounds = (from_offset, to_offset, from_time, to_time)
    if any(b is not None and not kernel.I64[0] <= b <= kernel.I64[1] for b in bounds):
        return None
    return k.JsonRecords(file_json, mode, *bounds)
