"""The events of a segment's offset index and time index: their entries (within the selected
offsets or times), the first entry out of order, Kafka's sanity check, the zero padding."""

from __future__ import annotations

from collections.abc import Iterator

from kseg.dump.error_events import error_event
from kseg.dump.options import DumpOptions
from kseg.dump.selection import in_times
from kseg.format.errors import CorruptionError


def _opened(index) -> object:
    """The view of a segment's index file being dumped (its OSError goes to the caller)."""
    if index.error is not None:
        raise index.error
    return index.view


def dump_offset_index(
    index, name: str, log_size: int | None, offsets: tuple[int, int] | None = None
) -> Iterator[dict]:
    idx = _opened(index)
    prev = None
    reported = False
    lo, hi = offsets or (None, None)
    for n, e in enumerate(idx):
        if offsets is None or lo <= e.offset <= hi:
            yield {"type": "index_entry", "file": name, "offset": e.offset, "position": e.position}
        problem = None
        if prev is not None and (e.offset <= prev.offset or e.position <= prev.position):
            problem = f"entry {n} ({e.offset}, {e.position}) does not increase after ({prev.offset}, {prev.position})"
        elif e.position < 0:
            problem = f"entry {n} points at byte {e.position}, a negative position"
        elif log_size is not None and e.position >= log_size:
            problem = (
                f"entry {n} points at byte {e.position}, past the end of the {log_size}-byte log"
            )
        if problem and not reported:
            reported = True  # the first one says enough; `kseg verify` lists them all
            yield error_event(
                CorruptionError(
                    problem, kind="invalid_index", position=n * idx.ENTRY_SIZE, offset=e.offset
                ),
                name,
            )
        prev = e
    yield from _index_tail(index, name, offsets is not None)


def _index_tail(index, name: str, selecting: bool = False) -> Iterator[dict]:
    """After an index's entries: Kafka's sanity check, and the zero padding if preallocated."""
    idx = index.view
    if index.problem is not None:
        yield error_event(index.problem.in_file(name), name)
    if idx.padded_bytes and not selecting:
        yield {
            "type": "index_padding",
            "file": name,
            "entries": len(idx),
            "padded_bytes": idx.padded_bytes,
        }


def dump_time_index(
    index, name: str, opts: DumpOptions, offsets: tuple[int, int] | None
) -> Iterator[dict]:
    """Entries within the offset range; dumped without its log, within the time window."""
    idx = _opened(index)
    by_time = offsets is None and (opts.from_time is not None or opts.to_time is not None)
    for e in idx:
        if offsets is not None and not offsets[0] <= e.offset <= offsets[1]:
            continue
        if by_time and not in_times(e.timestamp, opts):
            continue
        yield {
            "type": "timeindex_entry",
            "file": name,
            "timestamp": e.timestamp,
            "offset": e.offset,
        }
    yield from _index_tail(index, name, offsets is not None or by_time)
