"""What a salvage costs and gives back, per partition: the ``salvage`` event.

``kafka_keeps``: records and bytes Kafka's recovery would keep (kseg.salvage.kafka);
``salvage_keeps``: what salvage keeps; ``lost``: what is gone for good, with the offset ranges
the unreadable bytes held (``records_at_most``: compaction leaves offset gaps too, so a range
may have held fewer records; ``to_log_end``: a range lost up to the end of the log, whose size
no later entry bounds). ``skipped``: every byte range left out and why (``ambiguous``: entries
resumed inside the extent the damaged entry's own size field claims); ``edits``: bytes outside
the CRC written back in place.
"""

from __future__ import annotations

from kseg.salvage.walk import BELOW_LOG_START, SegmentSalvage
from kseg.verify.partition import PartitionReport

EVENT = "salvage"


def log_end(segs: list[SegmentSalvage]) -> int | None:
    """The log end offset after salvage: the last segment's next offset (its base offset when
    it keeps nothing, as Kafka's readNextOffset)."""
    if not segs:
        return None
    last = segs[-1]
    return last.source.base_offset if last.last_offset is None else last.last_offset + 1


def cost_event(
    report: PartitionReport, segs: list[SegmentSalvage], limits: list[int], starts: bool
) -> dict:
    pdir = report.target.partition_dir
    skipped, offsets = [], []
    records_at_most, lost_bytes, to_end = 0, 0, False
    for s in segs:
        log = str(pdir / s.source.name)
        for x in s.lost:
            skipped.append({"file": log, **x._asdict()})
            if x.kind == BELOW_LOG_START:
                continue
            lost_bytes += x.end - x.start
            if x.first_offset is None:
                continue  # a zero-filled tail: no records
            offsets.append([x.first_offset, x.last_offset])
            if x.last_offset is None:
                to_end = True
            else:
                records_at_most += x.last_offset - x.first_offset + 1
    edits = [
        {
            "file": str(pdir / s.source.name),
            "position": e.position,
            "old_hex": e.old.hex(),
            "new_hex": e.new.hex(),
            "reason": e.reason,
        }
        for s in segs
        for e in s.edits
    ]
    return {
        "type": EVENT,
        "partition_dir": str(pdir),
        "status": "clean",
        "kafka_keeps": {
            "records": sum(s.kafka_records for s in segs) if starts else 0,
            "bytes": sum(min(lim, s.size) for lim, s in zip(limits, segs, strict=True)),
            "log_end": report.kafka_log_end,
            "starts": starts,
        },
        "salvage_keeps": {
            "records": sum(s.records for s in segs),
            "bytes": sum(s.kept_bytes for s in segs),
            "log_end": log_end(segs),
        },
        "lost": {
            "records_at_most": records_at_most,
            "bytes": lost_bytes,
            "offsets": offsets,
            "to_log_end": to_end,
        },
        "below_log_start_bytes": sum(s.below_start for s in segs),
        "skipped": skipped,
        "edits": edits,
        "ambiguous": any(s.ambiguous for s in segs),
        "quarantine": None,
        "to": None,
    }
