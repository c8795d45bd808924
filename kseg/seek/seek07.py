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
    res = OffsetLocation(*_name(pdir), offset)
    start, end = part.log_start_offset, part.log_end_offset
    res.log_start_offset, res.log_end_offset = start, end
    if start is None or offset < start:
        res.status = "below_log_start"
        return res
    if offset >= end:
        res.status = "at_or_above_log_end"
        return res
    seg = part.segment_for(offset)
    res.segment = str(seg.path)
    try:
        with seg.mapped() as buf:
            for e in k7.entries(buf, base=seg.base_offset, source=str(seg.path)):
                if e.next_offset <= offset:
                    continue
                res.status = "found" if e.offset == offset else INSIDE_ENTRY
                res.offset, res.position = e.offset, e.position
                res.batch_base_offset, res.batch_last_offset = e.offset, e.next_offset - 1
                return res
    except CorruptionError as exc:
        res.error, res.status = exc, "corrupt"
        return res
    res.status = "at_or_above_log_end"  # past this segment's end: a gap before the next one
    return res


def seek_time07(pdir: Path, target: int, *, now_ms: int | None = None) -> SeekResult:
    part = Partition07(pdir)
    res = SeekResult(*_name(pdir), target)
    segs = part.segments
    if not segs:
        return res
    pairs = [(s.base_offset, s.mtime_ms, s) for s in segs]
    if segs[-1].size > 0:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        pairs.append((segs[-1].end_offset, now, None))
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
        res.warnings.append(f"{pdir}: {MTIME_NOTE}")
    if chosen is None:
        return res
    res.offset = chosen[0]
    if chosen[2] is not None:
        res.segment, res.position = str(chosen[2].path), 0
    return res
