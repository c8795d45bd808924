"""The Spark source's decoder on the compiled kernel: records of valid v2 batches straight into
Arrow buffers (kernel/src/arrow.rs), spliced with the Python decoder for every other entry.
"""

from __future__ import annotations

from kseg import kernel
from kseg.storage import kernel_walk

# why Records.walk returned (kernel/src/arrow.rs)
_STOP_END, _STOP_FULL, _STOP_COMPRESSED, _STOP_DONE = 0, 1, 3, 4

# Compressed batches decompressed by the kernel's codecs (kernel/src/codecs.rs) under the core's
# bound; any batch they do not decompress (an error, a bomb) still goes to the core's codecs,
# which say why. False: every compressed batch goes to the core's codecs (tests, bench/kernel.py).
KERNEL_CODECS = True


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
    rows. Compressed batches are decompressed by the kernel's codecs under the core's bound
    (any it does not take, by the core's, which report what fails), their records decoded by
    the kernel.
    """
    k = kernel.compiled()
    if k is None:
        return None
    bounds = (from_time, to_time, from_offset, to_offset)
    if any(b is not None and not kernel.I64[0] <= b <= kernel.I64[1] for b in bounds):
        return None
    import pyarrow as pa

    from kseg.format import compression as codecs
    from kseg.format.batch import ATTR_COMPRESSION, HEADER_SIZE, RecordBatch
    from kseg.format.errors import CorruptionError
    from kseg.format.log import _Behind, iter_entries
    from kseg.format.timestamps import MAX_MS, MIN_MS

    names = [codecs.codec_name(cid).encode() for cid in range(ATTR_COMPRESSION + 1)]
    limit = codecs.DEFAULT_MAX_DECOMPRESSED if KERNEL_CODECS else None

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
            from_offset, to_offset, shift, MIN_MS, MAX_MS, names, limit,
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
            window = min(end, pos + kernel_walk.WINDOW)
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
