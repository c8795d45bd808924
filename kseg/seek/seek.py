"""Offset for a timestamp (ListOffsets) and position for an offset, answered from the files.

Semantics follow the broker (FORMATS.md section 7): the first segment whose max timestamp >= T,
then the time index, the offset index and a scan from there; the answer is the first record with
timestamp >= T and offset >= the log start offset. Control batches are not skipped (the broker
can answer a transaction marker) unless ``data_only``. Unlike the broker, segments that cannot
match (no timestamps) are skipped, so the answer is always the first such record in log order.

Work is O(log n) per segment touched: one time-index tail per segment, one time index, one offset
index and the few batches after the indexed position.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from kseg.format import batch as v2
from kseg.format.errors import CorruptionError
from kseg.storage import files as F
from kseg.storage.partition import Partition

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
SPECIAL_NAMES = {"latest": LATEST, "earliest": EARLIEST, "max-timestamp": MAX_TIMESTAMP}
UNSUPPORTED = {-4: "earliest-local", -5: "latest-tiered", -6: "earliest-pending-upload"}


class SeekResult(NamedTuple):
    topic: str | None
    partition: int | None
    target: int
    offset: int | None = None
    timestamp: int | None = None
    leader_epoch: int | None = None
    segment: str | None = None
    position: int | None = None
    error: CorruptionError | None = None
    warnings: Sequence[str] = ()
    problems: Sequence[CorruptionError] = ()  # invalid data worked around (a lying index entry)
    bytes_read: int = 0

    def to_event(self) -> dict:
        return {
            "type": "seek",
            "topic": self.topic,
            "partition": self.partition,
            "target": self.target,
            "offset": self.offset,
            "timestamp": self.timestamp,
            "leader_epoch": self.leader_epoch,
            "segment": self.segment,
            "position": self.position,
            "error": str(self.error) if self.error else None,
        }


def _epoch(entry) -> int | None:
    e = getattr(entry, "partition_leader_epoch", -1)
    return e if e is not None and e >= 0 else None


def seek_time(
    pdir: Path, target: int, *, data_only: bool = False, lso: int | None = None
) -> SeekResult:
    """``lso``: answer as ListOffsets under read_committed does (Partition.fetchOffsetForTimestamp:
    the last fetchable offset is the last stable offset): latest is ``lso``, and a time or
    max-timestamp answer at or past it is no offset; earliest is unchanged."""
    part = Partition(pdir)
    found: dict = {}  # SeekResult's fields as the steps find them (kept when one then fails)
    error = None
    try:
        if target in UNSUPPORTED:
            raise ValueError(
                f"target {target} ({UNSUPPORTED[target]}) needs broker or tiered-storage state"
            )
        if target == LATEST:
            found["offset"] = part.log_end_offset()
        elif target == EARLIEST:
            found["offset"] = part.log_start_offset()
            found.update(_locate(part, found["offset"]))
        elif target == MAX_TIMESTAMP:
            found.update(_max_timestamp(part, data_only))
        elif target >= 0:
            found.update(_by_time(part, target, data_only))
        else:
            raise ValueError(f"unknown special target {target}")
    except CorruptionError as exc:
        error = exc
    if lso is not None and target != EARLIEST:
        if target == LATEST:
            found["offset"] = lso
        elif found.get("offset") is not None and found["offset"] >= lso:
            found = {}
    return SeekResult(
        part.topic,
        part.partition,
        target,
        **found,
        error=error,
        warnings=part.warnings,
        problems=part.problems,
        bytes_read=part.bytes_read,
    )


def _by_time(part: Partition, target: int, data_only: bool) -> dict:
    start_offset = part.log_start_offset()
    for seg in part.segments:
        if part.max_timestamp(seg) < target:
            continue
        from_offset = part.time_start_offset(seg, target)
        for entry in part.batches_for(seg, max(from_offset, start_offset)):
            if entry.max_timestamp < target or (data_only and entry.is_control):
                continue
            for rec in entry.records():
                if rec.timestamp >= target and rec.offset >= start_offset:
                    return _answer(rec, entry, seg)
    return {}  # no record at or after the target: no offset (the broker answers -1)


def _max_timestamp(part: Partition, data_only: bool) -> dict:
    best_seg, best = None, -1
    for seg in part.segments:
        m = part.max_timestamp(seg)
        if m > best:
            best_seg, best = seg, m
    if best_seg is None:
        return {}
    from_offset = part.time_start_offset(best_seg, best - 1)
    for entry in part.batches_for(best_seg, from_offset):
        if entry.max_timestamp != best or (data_only and entry.is_control):
            continue
        for rec in entry.records():
            if rec.timestamp == best:
                return _answer(rec, entry, best_seg)
    return {}


def _answer(rec, entry, seg) -> dict:
    return {
        "offset": rec.offset,
        "timestamp": rec.timestamp,
        "leader_epoch": _epoch(entry),
        "segment": str(seg.log),
        "position": entry.position,
    }


def _locate(part: Partition, offset: int) -> dict:
    seg = part.segment_for(offset)
    if seg is None:
        return {}
    for entry in part.batches_for(seg, offset):
        if entry.last_offset >= offset:
            return {
                "segment": str(seg.log),
                "position": entry.position,
                "leader_epoch": _epoch(entry),
            }
    return {}


class OffsetLocation(NamedTuple):
    topic: str | None
    partition: int | None
    target_offset: int
    status: str = ""  # "found", "in_gap", "below_log_start", "at_or_above_log_end", "corrupt"
    offset: int | None = None  # the target, or the next offset that exists
    segment: str | None = None
    position: int | None = None
    batch_base_offset: int | None = None
    batch_last_offset: int | None = None
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    error: CorruptionError | None = None
    warnings: Sequence[str] = ()
    problems: Sequence[CorruptionError] = ()  # invalid data worked around (a lying index entry)
    bytes_read: int = 0

    def to_event(self) -> dict:
        out = {"type": "seek_offset"}
        for k, v in zip(self._fields, self, strict=True):
            if k in ("warnings", "problems", "bytes_read"):
                continue
            out[k] = str(v) if isinstance(v, CorruptionError) else v
        return out


def _first_and_next(entry, offset: int) -> tuple[int | None, int | None]:
    """The entry's first record offset and its first offset >= ``offset``, streaming the
    records (a batch can hold millions; their offsets are never collected)."""
    first = None
    for rec in entry.record_tuples():
        if first is None:
            first = rec[4]
        if rec[4] >= offset:
            return first, rec[4]
    return first, None


def seek_offset(pdir: Path, offset: int) -> OffsetLocation:
    """The broker's read path: segment by base offset, offset index, scan."""
    part = Partition(pdir)
    found: dict = {}  # OffsetLocation's fields as they are found (kept when a step then fails)
    try:
        start, end = part.log_start_offset(), part.log_end_offset()
        found.update(log_start_offset=start, log_end_offset=end)
        if offset < start:
            found["status"] = "below_log_start"
        elif offset >= end:
            found["status"] = "at_or_above_log_end"
        else:
            found.update(_read_path(part, offset))
    except CorruptionError as exc:
        found.update(error=exc, status="corrupt")
    return OffsetLocation(
        part.topic,
        part.partition,
        offset,
        **found,
        warnings=part.warnings,
        problems=part.problems,
        bytes_read=part.bytes_read,
    )


def _read_path(part: Partition, offset: int) -> dict:
    seg = part.segment_for(offset)
    while seg is not None:
        for entry in part.batches_for(seg, offset):
            if entry.last_offset < offset:
                continue
            first, nxt = _first_and_next(entry, offset)
            if nxt is None:
                continue  # an empty (compacted) batch: the next batch holds it
            return {
                "status": "found" if nxt == offset else "in_gap",
                "offset": nxt,
                "segment": str(seg.log),
                "position": entry.position,
                "batch_base_offset": (
                    entry.base_offset if isinstance(entry, v2.RecordBatch) else first
                ),
                "batch_last_offset": entry.last_offset,
            }
        seg = part.next_segment(seg)
    return {"status": "at_or_above_log_end"}


def reset_rows(answers, warn) -> Iterator[tuple[str, int, int]]:
    """``topic,partition,offset`` rows for kafka-consumer-groups' --from-file: ONE row per
    topic-partition, however many replicas (log dirs) were read. The tool reads exactly three
    columns and no comments, and a consumer group has one position per partition.

    ``answers``: (seek event, partition dir) pairs. Replicas that agree give that offset.
    Replicas that disagree (a lagging follower, a broker with other retention) give the answer
    of the replica with the greatest log end offset, the most complete copy, and ``warn`` gets
    one line naming every replica's answer. Deleted, future and stray partition dirs
    (``-delete``/``-future``/``-stray``) are no live replica and give no row."""
    groups: dict[tuple[str, int], list[tuple[dict, Path]]] = {}
    for ev, pdir in answers:
        name = F.parse_partition_dir(pdir.name)
        if name is None:  # kafka-consumer-groups needs a topic and a partition: no row to give
            warn(f"{pdir}: not named <topic>-<partition>: no reset-csv row for it")
            continue
        if ev["offset"] is None or name.state:
            continue
        groups.setdefault((ev["topic"], ev["partition"]), []).append((ev, pdir))
    for (topic, part), reps in groups.items():
        if len({ev["offset"] for ev, _ in reps}) == 1:
            yield topic, part, reps[0][0]["offset"]
            continue
        ends = [seek_time(pdir, LATEST).offset or 0 for _, pdir in reps]
        best, best_dir = reps[max(range(len(reps)), key=ends.__getitem__)]
        listed = ", ".join(f"{pdir.parent}: {ev['offset']}" for ev, pdir in reps)
        warn(
            f"{topic}-{part}: replicas disagree ({listed}); using {best['offset']} from "
            f"{best_dir.parent}, the replica with the longest log"
        )
        yield topic, part, best["offset"]
