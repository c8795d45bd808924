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

from collections.abc import Iterator
from pathlib import Path

from kseg.format import batch as v2
from kseg.format.errors import CorruptionError
from kseg.format.value_class import Value
from kseg.storage import files as F
from kseg.storage.partition import Partition

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
SPECIAL_NAMES = {"latest": LATEST, "earliest": EARLIEST, "max-timestamp": MAX_TIMESTAMP}
UNSUPPORTED = {-4: "earliest-local", -5: "latest-tiered", -6: "earliest-pending-upload"}


class SeekResult(Value):
    topic: str | None
    partition: int | None
    target: int
    offset: int | None
    timestamp: int | None
    leader_epoch: int | None
    segment: str | None
    position: int | None
    error: CorruptionError | None
    warnings: list[str]
    problems: list[CorruptionError]  # invalid data worked around (a lying index entry)
    bytes_read: int

    __slots__ = (
        "topic",
        "partition",
        "target",
        "offset",
        "timestamp",
        "leader_epoch",
        "segment",
        "position",
        "error",
        "warnings",
        "problems",
        "bytes_read",
    )

    def __init__(
        self,
        topic: str | None,
        partition: int | None,
        target: int,
        offset: int | None = None,
        timestamp: int | None = None,
        leader_epoch: int | None = None,
        segment: str | None = None,
        position: int | None = None,
        error: CorruptionError | None = None,
        warnings: list[str] | None = None,
        problems: list[CorruptionError] | None = None,
        bytes_read: int = 0,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.target = target
        self.offset = offset
        self.timestamp = timestamp
        self.leader_epoch = leader_epoch
        self.segment = segment
        self.position = position
        self.error = error
        self.warnings = [] if warnings is None else warnings
        self.problems = [] if problems is None else problems
        self.bytes_read = bytes_read

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


def seek_time(pdir: Path, target: int, *, data_only: bool = False) -> SeekResult:
    part = Partition(pdir)
    res = SeekResult(part.topic, part.partition, target)
    try:
        if target in UNSUPPORTED:
            raise ValueError(
                f"target {target} ({UNSUPPORTED[target]}) needs broker or tiered-storage state"
            )
        if target == LATEST:
            res.offset = part.log_end_offset()
        elif target == EARLIEST:
            res.offset = part.log_start_offset()
            _locate(part, res, res.offset)
        elif target == MAX_TIMESTAMP:
            _max_timestamp(part, res, data_only)
        elif target >= 0:
            _by_time(part, res, target, data_only)
        else:
            raise ValueError(f"unknown special target {target}")
    except CorruptionError as exc:
        res.error = exc
    res.warnings, res.problems = part.warnings, part.problems
    res.bytes_read = part.bytes_read
    return res


def _by_time(part: Partition, res: SeekResult, target: int, data_only: bool) -> None:
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
                    res.offset, res.timestamp, res.leader_epoch = (
                        rec.offset,
                        rec.timestamp,
                        _epoch(entry),
                    )
                    res.segment, res.position = str(seg.log), entry.position
                    return
    # no record at or after the target: no offset (the broker answers -1)


def _max_timestamp(part: Partition, res: SeekResult, data_only: bool) -> None:
    best_seg, best = None, -1
    for seg in part.segments:
        m = part.max_timestamp(seg)
        if m > best:
            best_seg, best = seg, m
    if best_seg is None:
        return
    from_offset = part.time_start_offset(best_seg, best - 1)
    for entry in part.batches_for(best_seg, from_offset):
        if entry.max_timestamp != best or (data_only and entry.is_control):
            continue
        for rec in entry.records():
            if rec.timestamp == best:
                res.offset, res.timestamp, res.leader_epoch = (
                    rec.offset,
                    rec.timestamp,
                    _epoch(entry),
                )
                res.segment, res.position = str(best_seg.log), entry.position
                return


def _locate(part: Partition, res: SeekResult, offset: int) -> None:
    seg = part.segment_for(offset)
    if seg is None:
        return
    for entry in part.batches_for(seg, offset):
        if entry.last_offset >= offset:
            res.segment, res.position, res.leader_epoch = (
                str(seg.log),
                entry.position,
                _epoch(entry),
            )
            return


class OffsetLocation(Value):
    topic: str | None
    partition: int | None
    target_offset: int
    status: str  # "found", "in_gap", "below_log_start", "at_or_above_log_end", "corrupt"
    offset: int | None  # the target, or the next offset that exists
    segment: str | None
    position: int | None
    batch_base_offset: int | None
    batch_last_offset: int | None
    log_start_offset: int | None
    log_end_offset: int | None
    error: CorruptionError | None
    warnings: list[str]
    problems: list[CorruptionError]  # invalid data worked around (a lying index entry)
    bytes_read: int

    __slots__ = (
        "topic",
        "partition",
        "target_offset",
        "status",
        "offset",
        "segment",
        "position",
        "batch_base_offset",
        "batch_last_offset",
        "log_start_offset",
        "log_end_offset",
        "error",
        "warnings",
        "problems",
        "bytes_read",
    )

    def __init__(
        self,
        topic: str | None,
        partition: int | None,
        target_offset: int,
        status: str = "",
        offset: int | None = None,
        segment: str | None = None,
        position: int | None = None,
        batch_base_offset: int | None = None,
        batch_last_offset: int | None = None,
        log_start_offset: int | None = None,
        log_end_offset: int | None = None,
        error: CorruptionError | None = None,
        warnings: list[str] | None = None,
        problems: list[CorruptionError] | None = None,
        bytes_read: int = 0,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.target_offset = target_offset
        self.status = status
        self.offset = offset
        self.segment = segment
        self.position = position
        self.batch_base_offset = batch_base_offset
        self.batch_last_offset = batch_last_offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset
        self.error = error
        self.warnings = [] if warnings is None else warnings
        self.problems = [] if problems is None else problems
        self.bytes_read = bytes_read

    def to_event(self) -> dict:
        out = {"type": "seek_offset"}
        for k in self.__slots__:
            if k in ("warnings", "problems", "bytes_read"):
                continue
            v = getattr(self, k)
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
    res = OffsetLocation(part.topic, part.partition, offset)
    try:
        start, end = part.log_start_offset(), part.log_end_offset()
        res.log_start_offset, res.log_end_offset = start, end
        if offset < start:
            res.status = "below_log_start"
        elif offset >= end:
            res.status = "at_or_above_log_end"
        else:
            seg = part.segment_for(offset)
            while seg is not None:
                for entry in part.batches_for(seg, offset):
                    if entry.last_offset < offset:
                        continue
                    first, nxt = _first_and_next(entry, offset)
                    if nxt is None:
                        continue  # an empty (compacted) batch: the next batch holds it
                    res.status = "found" if nxt == offset else "in_gap"
                    res.offset, res.segment, res.position = nxt, str(seg.log), entry.position
                    res.batch_base_offset = (
                        entry.base_offset if isinstance(entry, v2.RecordBatch) else first
                    )
                    res.batch_last_offset = entry.last_offset
                    break
                else:
                    seg = part.next_segment(seg)
                    continue
                break
            else:
                res.status = "at_or_above_log_end"
    except CorruptionError as exc:
        res.error = exc
        res.status = "corrupt"
    res.warnings, res.problems, res.bytes_read = part.warnings, part.problems, part.bytes_read
    return res


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
