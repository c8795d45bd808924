"""`kseg stats`: what a data directory holds, per topic, partition (and hour), from one pass over
batch headers — no record is decoded unless asked.

What each number means (the one definition; ``kseg spark stats`` computes the same numbers with
Spark's aggregations over the batches view, and tests/spark/test_stats_local.py holds the two
together). A "batch" is a v2 record batch or a legacy (magic 0/1) top-level message:

- ``records``: records of non-control batches (v2 ``records_count``; a legacy message is one
  record, a compressed legacy wrapper is decompressed, bounded, to count its inner messages);
- ``batches``: every batch, control batches included;
- ``bytes``: bytes on disk of those batches (``size``: the 12-byte log overhead included);
  ``segment_bytes``: the `.log` files' sizes (more when a segment holds a corrupt tail);
- ``uncompressed_bytes`` (``uncompressed=True`` only; null otherwise): an uncompressed batch's
  size, a compressed v2 batch's header + its decompressed records, a legacy wrapper's size with
  its value decompressed; ``compression_ratio`` = uncompressed_bytes / bytes;
- ``codecs``: the codecs seen, sorted; ``codec_shares``: each codec's share of ``bytes``;
- ``first_offset``/``last_offset``: smallest base offset, greatest last offset;
- ``min_base_timestamp``: the smallest base timestamp >= 0 (null when none); ``max_timestamp``:
  the greatest max timestamp (-1: none); an hour (``by_hour``) is the UTC hour of a batch's
  max timestamp (null when no date holds it);
- ``producers``: distinct producer ids >= 0;
- ``transactional_share``/``control_share``: the share of ``bytes`` in transactional / control
  batches.

Counting a segment stops at its first invalid entry (a CRC mismatch, a torn or zero-filled tail,
a lie in a size), as Kafka's recovery and the Spark batches view do: that entry is reported with
the file and byte position (exit 4) and the segment's counts are those of the entries before it.
Kafka 0.7 partitions (`.kafka` segments: byte offsets, no timestamps) are not counted; each is
named in a notice.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from kseg import kernel
from kseg.format import compression as codecs
from kseg.format.accumulator import Accumulator
from kseg.format.batch import (
    ATTR_COMPRESSION,
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    FIELD_POS,
    HEADER_SIZE,
)
from kseg.format.errors import CorruptionError
from kseg.format.legacy import LegacyEntry
from kseg.format.magic import CURRENT_MAGIC
from kseg.format.timestamps import MAX_MS
from kseg.outcome import Outcome
from kseg.storage import files as F
from kseg.storage import jobs, kernel_walk
from kseg.storage.segment import Segment
from kseg.storage.tree import NOTHING_FOUND, InputError, Selection, Target, log_bytes

_BASE_TIMESTAMP = struct.Struct(">q")
_BASE_TIMESTAMP_POS = FIELD_POS["base_timestamp"]
_HOUR_MS = 3_600_000
_CODEC_NAMES = [codecs.codec_name(cid) for cid in range(ATTR_COMPRESSION + 1)]
_INDEX_KINDS = (F.INDEX, F.TIME_INDEX, F.TXN_INDEX)
SAMPLES_PER_PARTITION = 4096  # timeline points kept per partition for --plot (memory bound)


class Counts:
    """The numbers of one group of batches (a partition, an hour of it, a topic, a root)."""

    __slots__ = (
        "records",
        "batches",
        "bytes",
        "uncompressed_bytes",
        "codec_bytes",
        "first_offset",
        "last_offset",
        "min_base_timestamp",
        "max_timestamp",
        "producers",
        "transactional_bytes",
        "control_bytes",
    )

    def __init__(self) -> None:
        self.records = 0
        self.batches = 0
        self.bytes = 0
        self.uncompressed_bytes = 0
        self.codec_bytes: dict[str, int] = {}
        self.first_offset: int | None = None
        self.last_offset: int | None = None
        self.min_base_timestamp: int | None = None
        self.max_timestamp: int | None = None
        self.producers: set[int] = set()
        self.transactional_bytes = 0
        self.control_bytes = 0

    def add(
        self,
        size: int,
        base: int | None,
        last: int,
        records: int,
        codec: str,
        base_ts: int,
        max_ts: int,
        pid: int,
        transactional: bool,
        control: bool,
        uncompressed: int,
    ) -> None:
        self.batches += 1
        self.bytes += size
        self.records += records
        self.uncompressed_bytes += uncompressed
        self.codec_bytes[codec] = self.codec_bytes.get(codec, 0) + size
        if base is not None and (self.first_offset is None or base < self.first_offset):
            self.first_offset = base
        if self.last_offset is None or last > self.last_offset:
            self.last_offset = last
        if base_ts >= 0 and (self.min_base_timestamp is None or base_ts < self.min_base_timestamp):
            self.min_base_timestamp = base_ts
        if self.max_timestamp is None or max_ts > self.max_timestamp:
            self.max_timestamp = max_ts
        if pid >= 0:
            self.producers.add(pid)
        if transactional:
            self.transactional_bytes += size
        if control:
            self.control_bytes += size

    def merge(self, other: Counts) -> None:
        self.batches += other.batches
        self.bytes += other.bytes
        self.records += other.records
        self.uncompressed_bytes += other.uncompressed_bytes
        for codec, n in other.codec_bytes.items():
            self.codec_bytes[codec] = self.codec_bytes.get(codec, 0) + n
        for name, pick in (
            ("first_offset", min),
            ("last_offset", max),
            ("min_base_timestamp", min),
            ("max_timestamp", max),
        ):
            mine, theirs = getattr(self, name), getattr(other, name)
            if theirs is not None:
                setattr(self, name, theirs if mine is None else pick(mine, theirs))
        self.producers |= other.producers
        self.transactional_bytes += other.transactional_bytes
        self.control_bytes += other.control_bytes

    def fields(self, uncompressed: bool) -> dict:
        """The numbers as an event's fields (see the module's definitions)."""
        b = self.bytes
        share = (lambda n: n / b) if b else (lambda n: None)  # noqa: E731
        unc = self.uncompressed_bytes if uncompressed else None
        return {
            "records": self.records,
            "batches": self.batches,
            "bytes": b,
            "uncompressed_bytes": unc,
            "compression_ratio": unc / b if unc is not None and b else None,
            "codecs": sorted(self.codec_bytes),
            "codec_shares": {c: share(n) for c, n in sorted(self.codec_bytes.items())},
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "min_base_timestamp": self.min_base_timestamp,
            "max_timestamp": self.max_timestamp,
            "producers": len(self.producers),
            "transactional_share": share(self.transactional_bytes),
            "control_share": share(self.control_bytes),
        }


def hour_of(max_timestamp: int) -> int | None:
    """The UTC hour (as epoch ms) a batch is counted in: its max timestamp's; None when no date
    holds it (the years 0001-9999: MAX_MS; before 1970 too, as Spark's timestamp_millis does)."""
    if 0 <= max_timestamp <= MAX_MS:
        return max_timestamp - max_timestamp % _HOUR_MS
    return None


def hour_text(hour_ms: int | None) -> str | None:
    if hour_ms is None:
        return None
    return datetime.fromtimestamp(hour_ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:00:00Z")


class SegmentMark(Accumulator):
    """One segment on a partition's timeline (--plot), filled in as it is counted (an
    accumulator, not a value)."""

    __slots__ = ("file", "base_offset", "first_offset", "last_offset", "min_timestamp")
    __slots__ += ("max_timestamp", "error_position", "error_offset", "error_kind")

    def __init__(self, file: str, base_offset: int) -> None:
        self.file = file
        self.base_offset = base_offset
        self.first_offset: int | None = None
        self.last_offset: int | None = None
        self.min_timestamp: int | None = None
        self.max_timestamp: int | None = None
        self.error_position: int | None = None  # where counting stopped (corruption), in the file
        self.error_offset: int | None = None  # the offset there, as far as known (next expected)
        self.error_kind: str | None = None


class Timeline(Accumulator):
    """What --plot draws of a partition: segments, (last offset, max timestamp) samples, offset
    gaps and where counting stopped. Bounded: at most SAMPLES_PER_PARTITION samples (a stride
    that doubles when full) and 1,000 gaps. Filled in as the partition is counted (an
    accumulator, not a value)."""

    __slots__ = ("topic", "partition", "log_dir", "log_start_offset", "segments", "samples")
    __slots__ += ("gaps", "uncounted", "stride", "seen", "untimed")

    def __init__(self, topic: str | None, partition: int | None, log_dir: str) -> None:
        self.topic = topic
        self.partition = partition
        self.log_dir = log_dir
        self.log_start_offset: int | None = None
        self.segments: list[SegmentMark] = []
        self.samples: list[tuple[int, int]] = []
        self.gaps: list[tuple[int, int]] = []  # (first missing, next present)
        # offsets not counted: from where a segment stopped (corruption) to the next batch counted
        self.uncounted: list[tuple[int, int]] = []
        self.stride = 1
        self.seen = 0
        self.untimed = 0  # batches without a timestamp a date holds (magic 0, -1): not drawn

    def sample(self, last_offset: int, max_ts: int) -> None:
        self.seen += 1
        if self.seen % self.stride:
            return
        self.samples.append((last_offset, max_ts))
        if len(self.samples) >= SAMPLES_PER_PARTITION:
            self.samples = self.samples[::2]
            self.stride *= 2


class StatsOptions(NamedTuple):
    by_hour: bool = False
    uncompressed: bool = False
    timeline: bool = False  # keep what --plot draws
    # go on past damage (kseg.format.resync): each unreadable range a failure line, counting
    # goes on after it; partition_stats gain skipped_bytes and skipped_ranges
    resync: bool = False
    # count only what a read_committed consumer is handed (kseg.storage.isolation): aborted
    # transactions, control batches and what lies at or past the last stable offset left out
    read_committed: bool = False
    jobs: int | None = 1  # worker processes counting partitions (None: every core)


class Counted(NamedTuple):
    """What the totals take from one counted partition (it crosses from a --jobs worker)."""

    topic: str | None
    counts: Counts
    segments: int
    segment_bytes: int
    index_bytes: int
    walked: int  # batches walked (counted or, with read_committed, left out)
    outcome: Outcome
    timeline: Timeline | None  # with StatsOptions.timeline


class StatsRun(jobs.NoCounters):  # its workers move no counters (kseg.storage.jobs)
    """``kseg stats`` over a resolved selection: ``events()`` yields a ``partition_stats`` per
    partition (after its ``hour_stats`` with ``by_hour``) as each is counted, ``failure`` and
    ``notice`` messages, ``progress`` (bytes walked, for the bar; never rendered), then
    ``topic_stats`` per topic and ``root_stats`` per log dir. ``outcome``: what was found so far.
    ``timelines``: per partition, with ``timeline``."""

    def __init__(self, sel: Selection, opts: StatsOptions | None = None) -> None:
        self.opts = opts or StatsOptions()
        targets = sel.required_targets("count")
        self.skipped07 = [t for t in targets if t.kafka07]
        self.targets = [t for t in targets if not t.kafka07]
        self.several = sel.several_log_dirs
        self.outcome = Outcome.OK
        self.timelines: list[Timeline] = []
        self.partition_bytes: dict[tuple, int] = {}  # (log dir, topic, partition) -> bytes
        self.topic_rows: list[dict] = []  # the topic_stats events, for --plot
        self.counted_batches = 0
        if not any(t.logs for t in self.targets):
            where = ", ".join(str(t.partition_dir) for t in targets[:3])
            more = f" and {len(targets) - 3} more" if len(targets) > 3 else ""
            why = (
                "only Kafka 0.7 partitions (.kafka segments), which stats does not count"
                if self.skipped07 and not self.targets
                else "no segment (.log file)"
            )
            raise InputError(NOTHING_FOUND, where + more, f"{why}: nothing to count")

    def total_bytes(self) -> int:
        """The `.log` bytes to walk (the progress bar's total)."""
        return log_bytes(self.targets)

    def events(self) -> Iterator[dict]:
        for t in self.skipped07:
            yield {
                "type": "notice",
                "message": f"{t.partition_dir}: a Kafka 0.7 partition (.kafka segments): not "
                "counted (stats reads .log segments; `kseg dump` and `kseg verify` read it)",
            }
        topics: dict[tuple[str, str | None], Counts] = {}
        roots: dict[str, Counts] = {}
        extras: dict[tuple[str, str | None], list[int]] = {}  # segments, segment/index bytes
        root_extras: dict[str, list[int]] = {}
        walks = jobs.in_order(self._partition, self.targets, self.opts.jobs, self)
        try:
            for t, walk in zip(self.targets, walks, strict=True):
                part = yield from walk
                self.outcome |= part.outcome
                self.counted_batches += part.walked  # read_committed may count none of them
                ld = str(t.log_dir)
                if part.timeline is not None:
                    self.timelines.append(part.timeline)
                    key = (ld, part.timeline.topic, part.timeline.partition)
                    self.partition_bytes[key] = self.partition_bytes.get(key, 0) + part.counts.bytes
                key = (ld, part.topic)
                topics.setdefault(key, Counts()).merge(part.counts)
                roots.setdefault(ld, Counts()).merge(part.counts)
                for bucket, k in ((extras, key), (root_extras, ld)):
                    acc = bucket.setdefault(k, [0, 0, 0, 0])
                    acc[0] += 1
                    acc[1] += part.segments
                    acc[2] += part.segment_bytes
                    acc[3] += part.index_bytes
        finally:
            walks.close()  # the workers stopped and reaped, also on an error
        for (ld, topic), c in topics.items():
            n, segs, sb, ib = extras[(ld, topic)]
            row = {
                "type": "topic_stats",
                "topic": topic,
                **({"log_dir": ld} if self.several else {}),
                "partitions": n,
                **c.fields(self.opts.uncompressed),
                "segments": segs,
                "segment_bytes": sb,
                "index_bytes": ib,
            }
            self.topic_rows.append(row)
            yield row
        for ld, c in roots.items():
            n, segs, sb, ib = root_extras[ld]
            yield {
                "type": "root_stats",
                "log_dir": ld,
                "partitions": n,
                **c.fields(self.opts.uncompressed),
                "segments": segs,
                "segment_bytes": sb,
                "index_bytes": ib,
            }
        if self.counted_batches == 0 and not self.outcome:
            # nothing to count is never "ok" (segments exist but hold no batch)
            self.outcome |= Outcome.USAGE
            yield {
                "type": "failure",
                "message": f"{', '.join(str(t.partition_dir) for t in self.targets[:3])}: the "
                "segments hold no batch: nothing to count",
            }

    def _partition(self, t: Target):
        """One partition counted, its rows (``hour_stats``, then ``partition_stats``) last;
        returns what the totals need (in this process or a worker: kseg.storage.jobs)."""
        part = PartitionCount(t, self.opts)
        yield from part.walk()
        tags = self._tags(t)
        if self.opts.by_hour:
            for hour in sorted(part.hours, key=lambda h: (h is None, h or 0)):
                yield {
                    "type": "hour_stats",
                    **tags,
                    "hour": hour_text(hour),
                    **part.hours[hour].fields(self.opts.uncompressed),
                }
        yield {"type": "partition_stats", **tags, **part.row()}
        return Counted(
            tags["topic"],
            part.counts,
            part.segments,
            part.segment_bytes,
            part.index_bytes,
            part.walked,
            part.outcome,
            part.timeline if self.opts.timeline else None,
        )

    def _tags(self, t: Target) -> dict:
        name = t.name
        tags = {
            "topic": name.topic if name else None,
            "partition": name.partition if name else None,
        }
        if self.several:
            tags["log_dir"] = str(t.log_dir)
        return tags


class PartitionCount:
    """One partition (or one segment given by path) counted: ``counts``, ``hours``, the segment
    and index sizes, its ``timeline``, ``outcome``."""

    def __init__(self, target: Target, opts: StatsOptions) -> None:
        self.target = target
        self.opts = opts
        self.counts = Counts()
        self.hours: dict[int | None, Counts] = {}
        self.segments = 0
        self.segment_bytes = 0
        self.index_bytes = 0
        self.errors = 0
        self.outcome = Outcome.OK
        name = target.name
        self.timeline = Timeline(
            name.topic if name else None, name.partition if name else None, str(target.log_dir)
        )
        self.log_start_offset: int | None = None
        self._prev_last: int | None = None
        self._problems: list[dict] = []  # content problems met in the segment being counted
        self._after_stop = False  # a segment stopped: the next batch ends uncounted offsets
        self._seg_last = -1  # the segment's highest last offset so far (--resync's rule)
        self._seg_doubt = False  # the segment's last range skipped was ambiguous (the same)
        self.skipped_bytes = 0
        self.skipped_ranges = 0
        self.committed = None  # read_committed: the partition's Committed (set by walk)
        self.walked = 0  # batches walked (counted or, with read_committed, left out)

    def row(self) -> dict:
        return {
            **self.counts.fields(self.opts.uncompressed),
            "segments": self.segments,
            "segment_bytes": self.segment_bytes,
            "index_bytes": self.index_bytes,
            "log_start_offset": self.log_start_offset,
            "errors": self.errors,
            **(
                {"skipped_bytes": self.skipped_bytes, "skipped_ranges": self.skipped_ranges}
                if self.opts.resync
                else {}
            ),
        }

    def walk(self) -> Iterator[dict]:
        t = self.target
        if t.name is not None:
            self.log_start_offset = _log_start(t)
            self.timeline.log_start_offset = self.log_start_offset
        if self.opts.read_committed:
            from kseg.storage.isolation import committed_for, replay_stopped

            try:  # a segment outside any partition dir: replayed alone
                loose = t.name is None and len(t.logs) == 1 and t.logs[0].is_file()
                self.committed = committed_for(t.logs[0] if loose else t.partition_dir, loose=loose)
            except OSError as exc:
                self.outcome |= Outcome.UNREADABLE
                yield {"type": "failure", "message": f"{exc.filename or t.partition_dir}: {exc}"}
                return
            if self.committed.error is not None:  # the LSO is at most there: said, as dump does
                self.outcome |= Outcome.INVALID_DATA
                msg = f"{self.committed.error}{replay_stopped('counted')}"
                yield {"type": "failure", "message": msg}
        for log in t.logs:
            seg = Segment(log)
            self.segments += 1
            self.index_bytes += _index_bytes(seg)
            mark = SegmentMark(str(log), seg.base_offset)
            if self.opts.timeline:
                self.timeline.segments.append(mark)
            size = 0
            stop = None
            try:
                size = seg.size()
                self.segment_bytes += size
                with seg.mapped(sequential=True) as buf:
                    self._segment(seg, buf, mark)
            except CorruptionError as exc:
                exc = exc.in_file(str(log))
                self._stopped(mark, exc.position, exc.kind)
                stop = f"{exc} (counting of this segment stops here)"
            except _CrcMismatch as exc:
                self._stopped(mark, exc.position, "crc_mismatch")
                stop = (
                    f"{log}: byte {exc.position}: crc_mismatch: the batch's CRC does not match "
                    "its bytes (counting of this segment stops here)"
                )
            except OSError as exc:
                self.outcome |= Outcome.UNREADABLE
                stop = f"{exc.filename or log}: {exc.strerror or exc}"
            problems, self._problems = self._problems, []
            yield from problems
            if stop is not None:
                yield {"type": "failure", "message": stop}
            yield {"type": "progress", "bytes": size, "file": str(seg.log)}

    def _stopped(self, mark: SegmentMark, position: int | None, kind: str) -> None:
        self.outcome |= Outcome.INVALID_DATA
        self.errors += 1
        mark.error_position = position
        mark.error_kind = kind
        mark.error_offset = None if self._prev_last is None else self._prev_last + 1
        self._after_stop = True

    def _segment(self, seg: Segment, buf, mark: SegmentMark) -> None:
        """Count the segment's entries. The kernel's walk hands rows over right after walking
        the bytes they describe, so a row's bytes are still readable in ``buf`` (a buffer read
        on demand lets go of what lies far behind); the core's walk yields entry by entry."""
        self._problems = []
        self._seg_last = seg.base_offset - 1
        self._seg_doubt = False
        start = 0
        while True:
            try:
                self._walk_from(seg, buf, mark, start)
                return
            except (CorruptionError, _CrcMismatch) as exc:
                if not self.opts.resync:
                    raise
                start = self._resync(buf, mark, exc, start)
                if start is None:
                    return

    def _walk_from(self, seg: Segment, buf, mark: SegmentMark, start: int) -> None:
        if kernel.compiled() is None:
            for row in seg.walk_headers(buf, start):
                self._row(buf, row, mark)
            return
        unpack = kernel_walk.ROW.iter_unpack
        for block in seg.walk_blocks(buf, start):
            for row in unpack(block):
                self._row(buf, row, mark)

    def _resync(self, buf, mark: SegmentMark, exc, start: int) -> int | None:
        """--resync: the range a walk from ``start`` stopped at is skipped (a failure line,
        exit 4) and counting goes on where intact entries start again; returns that position
        (None: nowhere in this segment)."""
        from kseg.dump.error_events import skipped_event, skipped_message
        from kseg.format.log import iter_entries
        from kseg.format.resync import skip_from

        end = len(buf)
        if isinstance(exc, _CrcMismatch):  # the core's error for that entry, with its message
            try:
                next(iter_entries(buf, exc.position, end, validate=True), None)
                exc = CorruptionError("CRC mismatch", kind="crc_mismatch", position=exc.position)
            except CorruptionError as real:
                exc = real
        exc = exc.in_file(mark.file)
        skipped, resumed = skip_from(
            buf, exc, start, end, self._seg_last, scan=kernel_walk.resync_scanner(),
            after_ambiguous=self._seg_doubt,
        )  # fmt: skip
        self._seg_doubt = skipped.ambiguous
        if mark.error_position is None:
            self._stopped(mark, skipped.start, skipped.kind)
        else:
            self.outcome |= Outcome.INVALID_DATA
            self.errors += 1
            self._after_stop = True
        self.skipped_bytes += skipped.end - skipped.start
        self.skipped_ranges += 1
        ev = skipped_event(skipped, mark.file)
        self._problems.append(
            {
                "type": "failure",
                "message": f"{mark.file}: byte {skipped.start}: skipped {skipped_message(ev)}"
                " (counting goes on after it)",
            }
        )
        return resumed

    def _row(self, buf, row: tuple, mark: SegmentMark) -> None:
        pos, size, magic, base, last, max_ts, count, attrs, pid, ok, _ple = row
        if not ok:
            raise _CrcMismatch(pos)
        self.walked += 1
        committed = self.committed
        if committed is not None and not committed.keeps_row(magic, pid, last, attrs):
            if last > self._seg_last:
                self._seg_last = last
            return  # not what a read_committed consumer gets: not counted
        unc = 0
        if magic >= CURRENT_MAGIC:
            base_ts = _BASE_TIMESTAMP.unpack_from(buf, pos + _BASE_TIMESTAMP_POS)[0]
            cid = attrs & ATTR_COMPRESSION
            control = bool(attrs & ATTR_CONTROL)
            transactional = bool(attrs & ATTR_TRANSACTIONAL)
            records = 0 if control else count
            if self.opts.uncompressed:
                unc = size if cid == 0 else self._v2_uncompressed(buf, pos, size, cid, seg=mark)
        else:
            base_ts = max_ts
            cid = attrs & ATTR_COMPRESSION
            control = transactional = False
            entry = LegacyEntry(buf, pos, mark.file)
            try:
                base, records = entry.base_offset, entry.records_count
            except CorruptionError as exc:
                # its CRC matched: the wrapper's content is what is wrong; count the entry's
                # bytes, not its records (as the Spark batches view leaves them null)
                self._problem(exc, mark)
                base, records = None, 0
            if self.opts.uncompressed:
                unc = size if cid == 0 else self._legacy_uncompressed(entry, mark)
        codec = _CODEC_NAMES[cid]
        self.counts.add(
            size, base, last, records, codec, base_ts, max_ts, pid, transactional, control, unc
        )
        if self.opts.by_hour:
            hour = hour_of(max_ts)
            c = self.hours.get(hour)
            if c is None:
                c = self.hours[hour] = Counts()
            c.add(
                size, base, last, records, codec, base_ts, max_ts, pid, transactional, control, unc
            )
        if self.opts.timeline:
            tl = self.timeline
            first = last if base is None else base
            if mark.first_offset is None:
                mark.first_offset = first
            mark.last_offset = last
            if 0 <= max_ts <= MAX_MS:
                if mark.max_timestamp is None or max_ts > mark.max_timestamp:
                    mark.max_timestamp = max_ts
                if mark.min_timestamp is None or max_ts < mark.min_timestamp:
                    mark.min_timestamp = max_ts
                tl.sample(last, max_ts)
            else:
                tl.untimed += 1
            jump = self._prev_last is not None and first > self._prev_last + 1
            if self._after_stop:  # the offsets between are in bytes not counted, not a gap
                if jump:
                    tl.uncounted.append((self._prev_last + 1, first))
                self._after_stop = False
            elif jump and len(tl.gaps) < 1000:
                tl.gaps.append((self._prev_last + 1, first))
        if self._prev_last is None or last > self._prev_last:
            self._prev_last = last
        if last > self._seg_last:
            self._seg_last = last

    def _v2_uncompressed(self, buf, pos: int, size: int, cid: int, seg: SegmentMark) -> int:
        try:
            with memoryview(buf) as mv:
                return HEADER_SIZE + len(codecs.decompress(cid, mv[pos + HEADER_SIZE : pos + size]))
        except CorruptionError as exc:
            if exc.position is None:
                exc.position = pos
            self._problem(exc, seg)
            return 0

    def _legacy_uncompressed(self, entry: LegacyEntry, seg: SegmentMark) -> int:
        try:
            _, value = entry.key_value()
            if value is None:
                return 0
            return entry.size - len(value) + entry.decompressed_size()
        except CorruptionError as exc:
            self._problem(exc, seg)
            return 0

    def _problem(self, exc: CorruptionError, seg: SegmentMark) -> None:
        """Invalid content inside an entry whose CRC matches: reported (exit 4), counting goes on."""
        self.outcome |= Outcome.INVALID_DATA
        self.errors += 1
        self._problems.append({"type": "failure", "message": str(exc.in_file(seg.file))})


class _CrcMismatch(Exception):
    def __init__(self, position: int) -> None:
        super().__init__(position)
        self.position = position


def _index_bytes(seg: Segment) -> int:
    total = 0
    for kind in _INDEX_KINDS:
        try:
            total += seg.file(kind).stat().st_size
        except OSError:
            pass
    return total


def _log_start(t: Target) -> int | None:
    """The partition's log start offset (checkpoint, else its first segment), for the plot."""
    from kseg.storage.partition import Partition

    try:
        return Partition(t.partition_dir).log_start_offset()
    except (OSError, CorruptionError, ValueError):
        return None


def count(paths: list[Path], topic=None, partition=None, opts: StatsOptions | None = None):
    """Library entry: a StatsRun over ``paths`` (see kseg.storage.tree.resolve)."""
    from kseg.storage.tree import resolve

    return StatsRun(resolve(paths, topic, partition, logs_only=True), opts)
