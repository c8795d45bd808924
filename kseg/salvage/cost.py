"""What a salvage costs and gives back, per partition: the ``salvage`` event.

``kafka_keeps``: records and bytes Kafka's recovery would keep (kseg.salvage.kafka);
``salvage_keeps``: what salvage keeps; ``lost``: what is gone for good, with the offset ranges
the unreadable bytes held (``records_at_most``: compaction leaves offset gaps too, so a range
may have held fewer records; ``to_log_end``: a range lost up to the end of the log, whose size
no later entry bounds). ``skipped``: every byte range left out and why (``ambiguous``: entries
resumed inside the extent the damaged entry's own size field claims); ``edits``: bytes outside
the CRC written back in place. ``kept_from``: where the kept records come from, the live log
first (one row), then each leftover source that gives some back (an earlier run's quarantined
bytes, a `.log.deleted` segment: kseg.salvage.leftovers) with the segment it goes back as;
``overlaps``: byte ranges of leftovers whose offsets were kept from elsewhere (never twice).
"""

from __future__ import annotations

from kseg.salvage.walk import BELOW_LOG_START, LIVE, OVERLAP, SegmentSalvage
from kseg.verify.partition import PartitionReport

EVENT = "salvage"


def live(segs: list[SegmentSalvage]) -> list[SegmentSalvage]:
    return [s for s in segs if s.source.origin == LIVE]


def leftovers(segs: list[SegmentSalvage]) -> list[SegmentSalvage]:
    """The leftover sources that give entries back (each becomes a new segment)."""
    return [s for s in segs if s.source.origin != LIVE and s.first_offset is not None]


def log_end(segs: list[SegmentSalvage]) -> int | None:
    """The log end offset after salvage: the last segment's next offset (its base offset when
    it keeps nothing, as Kafka's readNextOffset); a leftover put back ends it further."""
    segs_live = live(segs)
    end = None
    if segs_live:
        last = segs_live[-1]
        end = last.source.base_offset if last.last_offset is None else last.last_offset + 1
    for s in leftovers(segs):
        end = s.last_offset + 1 if end is None else max(end, s.last_offset + 1)
    return end


def _file(pdir, s: SegmentSalvage) -> str:
    return str(pdir / s.source.name) if s.source.origin == LIVE else str(s.source.path)


def cost_event(
    report: PartitionReport, segs: list[SegmentSalvage], limits: list[int], starts: bool
) -> dict:
    pdir = report.target.partition_dir
    skipped, offsets = [], []
    records_at_most, lost_bytes, to_end = 0, 0, False
    overlaps = []
    for s in segs:
        log = _file(pdir, s)
        for x in s.lost:
            if x.kind == OVERLAP:
                overlaps.append({"file": log, "origin": s.source.origin, **x._asdict()})
                continue
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
            "file": _file(pdir, s),
            "position": e.position,
            "old_hex": e.old.hex(),
            "new_hex": e.new.hex(),
            "reason": e.reason,
        }
        for s in segs
        for e in s.edits
    ]
    segs_live = live(segs)
    firsts = [s.first_offset for s in segs_live if s.first_offset is not None]
    lasts = [s.last_offset for s in segs_live if s.last_offset is not None]
    kept_from = [
        {
            "origin": LIVE,
            "file": str(pdir),
            "first_offset": min(firsts) if firsts else None,
            "last_offset": max(lasts) if lasts else None,
            "records": sum(s.records for s in segs_live),
            "bytes": sum(s.kept_bytes for s in segs_live),
            "put_back_as": None,
        }
    ] + [
        {
            "origin": s.source.origin,
            "file": str(s.source.path),
            "first_offset": s.first_offset,
            "last_offset": s.last_offset,
            "records": s.records,
            "bytes": s.kept_bytes,
            "put_back_as": s.put_back_name,
        }
        for s in leftovers(segs)
    ]
    return {
        "type": EVENT,
        "partition_dir": str(pdir),
        "status": "clean",
        "kafka_keeps": {
            "records": sum(s.kafka_records for s in segs) if starts else 0,
            "bytes": sum(min(lim, s.size) for lim, s in zip(limits, segs_live, strict=True)),
            "log_end": report.kafka_log_end,
            "starts": starts,
        },
        "salvage_keeps": {
            "records": sum(s.records for s in segs),
            "bytes": sum(s.kept_bytes for s in segs),
            "log_end": log_end(segs),
            "reset_to": None,
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
        "kept_from": kept_from,
        "overlaps": overlaps,
        "ambiguous": any(s.ambiguous for s in segs),
        "quarantine": None,
        "to": None,
    }
