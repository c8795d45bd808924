"""Kafka's own walk over a segment (LogSegment.recover), for a segment whose offsets go backwards.

kseg's scan stops at the first batch whose offsets contradict the log; Kafka's recovery does not
look at offsets that way. It walks every batch that passes ``RecordBatch.ensureValid`` (sizes,
CRC), checks only that the batch's last offset fits the segment's 32-bit relative offsets
(``ensureOffsetInRange``: else LogSegmentOffsetOverflowException, and LogLoader splits the
segment), and appends index entries by the index-append rule (kseg.format.index_rule, the same
code the LogWriter and `index rebuild` use). Offsets that go backwards matter to Kafka only when
an index append refuses them (InvalidOffsetException): then LogLoader.recoverLog truncates the
whole segment to its base offset ("Found invalid offset during recovery. Deleting the corrupt
segment and creating an empty one with starting offset N") and deletes every later unflushed
segment. Otherwise Kafka keeps every batch, the lying ones too.

Run only on segments whose offsets go backwards before Kafka's first invalid batch (rare), so
the plain header walk of the core is good enough here.
"""

from __future__ import annotations

from typing import NamedTuple

from kseg.format.errors import CorruptionError
from kseg.format.index_rule import IndexBuilder, RefusedEntry

INT32_MAX = 0x7FFFFFFF


class KafkaWalk(NamedTuple):
    stop: int | None  # byte where Kafka's walk meets an invalid batch (None: the end)
    next_offset: int  # LogSegment.readNextOffset after the walk (if nothing is refused)
    refused: RefusedEntry | None = None  # the index append Kafka refuses: the segment is emptied
    overflow: int | None = None  # byte of the batch Kafka's ensureOffsetInRange refuses (a split)
    overflow_offset: int | None = None


def kafka_walk(seg, buf, index_interval_bytes: int) -> KafkaWalk:
    """What LogSegment.recover does with ``seg`` (mapped as ``buf``)."""
    base = seg.base_offset
    stop, next_offset = None, base
    builder = IndexBuilder(base, index_interval_bytes)
    try:
        for pos, size, _m, _f, last, max_ts, _c, _a, _p, ok, _e in seg.walk_headers(buf):
            if not ok:  # ensureValid: the CRC (a v2 batch whose magic says 0/1 fails CRC-32)
                stop = pos
                break
            # a count or last_offset_delta that contradicts the offsets is no reason to stop:
            # ensureValid checks sizes and the CRC only (seen on 4.1.0: such a batch is kept)
            if not 0 <= last - base <= INT32_MAX:  # LogSegment.ensureOffsetInRange
                return KafkaWalk(stop, next_offset, overflow=pos, overflow_offset=last)
            builder.add(last, max_ts, size)
            if builder.invalid is not None:
                return KafkaWalk(stop, next_offset, builder.invalid)
            next_offset = last + 1
    except CorruptionError as exc:
        stop = exc.position
    builder.finish()  # the final time-index entry: refused too when its offset went backwards
    return KafkaWalk(stop, next_offset, builder.invalid)
