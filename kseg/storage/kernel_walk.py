"""The header walk on the compiled kernel, spliced with the pure-Python core (kseg.format.log):
what Segment's walk, verify's checker, stats and dump's search run on. The kernel walks the
plain valid v2 batches; every other entry goes to the core, which keeps every rule and message.
Kafka's index-append rule over the walk's rows is here too (verify builds indexes as it walks).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from kseg import kernel

ROW = struct.Struct("=11q")  # one walk row, as the kernel packs it (native int64)
CHUNK_BATCHES = 4096  # rows per kernel call: bounds the rows buffer (352 KiB)
WINDOW = 64 << 20  # bytes per kernel call: lets the walk drop passed pages of a map in between
READ_WINDOW = 8 << 20  # bytes made readable per kernel call on a buffer read on demand
STOP_OTHER = 2  # why the kernel's walk returned: the core takes the entry (kernel/src/walk.rs)


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
    k = kernel.compiled()
    if k is None:
        pack = ROW.pack
        block: list[bytes] = []
        for row in walk_headers(buf, start, end):
            block.append(pack(*row))
            if len(block) >= CHUNK_BATCHES:
                yield b"".join(block)
                block = []
        if block:
            yield b"".join(block)
        return
    behind = _Behind(buf, start)
    ensure = getattr(buf, "ensure", None)  # a buffer read on demand (storage.mapped.ShadowMap)
    # ...whose reads the kernel can make itself, walking behind each piece (mapped.READ_PIECE)
    read_walk = getattr(buf, "read_walk", None) if ensure is not None else None
    walk = k.walk
    pos = start
    while pos < end:
        if pos >= behind.next:
            behind.passed(pos)
        window = min(end, pos + WINDOW)
        done = None
        if ensure is not None:  # read on demand: as much at a time as the core's walk holds
            ahead = min(window, pos + READ_WINDOW)
            if read_walk is not None:
                done = read_walk(k.read_walk, pos, ahead, window, CHUNK_BATCHES)
            if done is None:
                window = min(window, ensure(pos, ahead))
        if done is None:
            rows, stop, reason = walk(buf, pos, window, CHUNK_BATCHES)
        else:
            rows, stop, reason, _ = done
        if rows:
            yield rows
        pos = stop
        if reason == STOP_OTHER:
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
    rows, stop, reason = kernel.compiled().walk(buf, pos, window, CHUNK_BATCHES)
    return rows, stop, reason == STOP_OTHER


def walk_headers(buf, start: int = 0, end: int | None = None) -> Iterator[tuple]:
    """Exactly kseg.format.log.walk_headers (same tuples, same errors), on the kernel if active."""
    if kernel.compiled() is None:
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
    k = kernel.compiled()
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
    k = kernel.compiled()
    return None if k is None else k.plain_run


def resync_scanner():
    """The resync byte scan's prefilter (kseg.format.resync.scan_candidates' contract): the
    compiled kernel's (kernel/src/resync.rs) when it is active, else the core's."""
    k = kernel.compiled()
    if k is not None:
        return k.resync_scan
    from kseg.format.resync import scan_candidates

    return scan_candidates


def last_offset_before(buf, start: int, stop: int | None, last: int) -> int:
    """The highest last offset of the entries in ``buf[start:stop]`` (which a walk has just read
    without a fault), or ``last`` when there are none: where a resync's offsets must rise above.
    A header walk (the compiled kernel's when loaded), no Python object per entry."""
    if stop is None or stop <= start:
        return last
    for block in walk_blocks(buf, start, stop):
        with memoryview(block).cast("q") as rows:
            last = max(last, max(rows[4 :: ROW.size // 8]))
    return last
