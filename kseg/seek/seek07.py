"""seek in a Kafka 0.7 partition: offsets are byte offsets; time answers by 0.7's own rule.

- ``--offset O``: the segment holding O (the last whose name is <= O), then a walk from its start
  (0.7 has no index): O is an entry boundary (``found``), or lies inside an entry, which is named
  (``inside_entry``: a 0.7 broker answers such a fetch with garbage or an error).
- ``--time t`` (0.7's ``Log.getOffsetsBefore``): the pairs (segment start, segment FILE MTIME) and,
  when the last segment is not empty, (log end, now); the answer is the offset of the newest pair
  whose time is <= t; none: no offset. ``latest`` (-1) is the log end, ``earliest`` (-2) the first
  segment's start. 0.7 messages carry no timestamps, so mtimes are all there is: copying files
  without keeping their mtimes changes the answer, and every answer says so.
"""

from __future__ import annotations

import time
from pathlib import Path

from kseg.format import kafka07 as k7
from kseg.format.errors import CorruptionError
from kseg.seek.seek import EARLIEST, LATEST, OffsetLocation, SeekResult
from kseg.storage import files as F
from kseg.storage.kafka07 import Partition07

INSIDE_ENTRY = "inside_entry"
MTIME_NOTE = (
    "Kafka 0.7 answers a time from segment file mtimes (its messages carry no timestamps): "
    "copying or touching the .kafka files changes this answer"
)


def _name(pdir: Path) -> tuple[str | None, int | None]:
    n = F.parse_partition_dir(pdir.name)
    return (n.topic, n.partition) if n else (None, None)


def seek_offset07(pdir: Path, offset: int) -> OffsetLocation:
    part = Partition07(pdir)
    start, end = part.log_start_offset, part.log_end_offset
    known = (*_name(pdir), offset)

    def answer(status: str, **found) -> OffsetLocation:
        return OffsetLocation(*known, status, log_start_offset=start, log_end_offset=end, **found)

    if start is None or offset < start:
        return answer("below_log_start")
    if offset >= end:
        return answer("at_or_above_log_end")
    seg = part.segment_for(offset)
    segment = str(seg.path)
    try:
        with seg.mapped() as buf:
            for e in k7.entries(buf, base=seg.base_offset, source=str(seg.path)):
                if e.next_offset <= offset:
                    continue
                return answer(
                    "found" if e.offset == offset else INSIDE_ENTRY,
                    offset=e.offset,
                    segment=segment,
                    position=e.position,
                    batch_base_offset=e.offset,
                    batch_last_offset=e.next_offset - 1,
                )
    except CorruptionError as exc:
        return answer("corrupt", segment=segment, error=exc)
    # past this segment's end: a gap before the next one
    return answer("at_or_above_log_end", segment=segment)


def seek_time07(pdir: Path, target: int, *, now_ms: int | None = None) -> SeekResult:
    part = Partition07(pdir)
    known = (*_name(pdir), target)
    segs = part.segments
    if not segs:
        return SeekResult(*known)
    pairs = [(s.base_offset, s.mtime_ms, s) for s in segs]
    if segs[-1].size > 0:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        pairs.append((segs[-1].end_offset, now, None))
    warnings = []
    if target == LATEST:
        chosen = pairs[-1]
    elif target == EARLIEST:
        chosen = pairs[0]
    elif target < 0:
        raise ValueError(
            f"target {target}: Kafka 0.7 messages carry no timestamps; only a time, latest (-1) "
            "and earliest (-2) can be answered"
        )
    else:
        chosen = next((p for p in reversed(pairs) if p[1] <= target), None)
        warnings.append(f"{pdir}: {MTIME_NOTE}")
    if chosen is None:
        return SeekResult(*known, warnings=warnings)
    if chosen[2] is None:
        return SeekResult(*known, chosen[0], warnings=warnings)
    return SeekResult(*known, chosen[0], segment=str(chosen[2].path), position=0, warnings=warnings)
