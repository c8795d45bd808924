"""Both paths over one buffer, for the differential tests, the fuzz script and the benchmarks:
the pure-Python core (kseg.format, kseg.decode.dump) and the compiled kernel (kseg._kernel)."""

from __future__ import annotations

import importlib.util
import struct

import orjson

from kseg.decode.dump import record_json_maker
from kseg.format import compression as codecs
from kseg.format.batch import ATTR_TIMESTAMP_TYPE, HEADER_SIZE, RecordBatch
from kseg.format.errors import CorruptionError
from kseg.format.log import walk_headers

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
    """The same through kseg.kernel.walk_headers (kernel + core for what the kernel leaves)."""
    from kseg import kernel

    rows: list[tuple] = []
    try:
        for row in kernel.walk_headers(buf):
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
        return b"".join(make(t) for t in RecordBatch(buf, pos).record_tuples())
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
