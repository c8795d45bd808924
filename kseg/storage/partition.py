"""A partition directory (Kafka's UnifiedLog/LogLoader as far as files tell): its segments in
offset order, log start and end, the leader-epoch checkpoint, and the two lookups every reader
needs: offset -> (segment, byte position) and timestamp -> offset to scan from.

Indexes are used as the broker uses them, and never trusted blindly: a missing or unusable index
(one text, :meth:`kseg.storage.segment.IndexFile.warning`) costs a scan of the segment and a
warning; an entry pointing where no valid batch starts (Segment.start_for) costs the same scan
and is invalid data (``problems``); never a wrong answer. ``bytes_read`` counts
what the lookups examined (seek reports it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kseg.format.batch import HEADER_SIZE
from kseg.format.checkpoint import EpochEntry, read_leader_epoch_checkpoint, read_offset_checkpoint
from kseg.format.errors import CRC_MISMATCH, CorruptionError
from kseg.format.log import iter_entries, walk_headers
from kseg.format.offset_index import OffsetIndex
from kseg.format.time_index import TimeIndex
from kseg.storage import files as F
from kseg.storage.segment import OFFSET_INDEX, TIME_INDEX, Segment
from kseg.storage.side_files import read_side_file
from kseg.storage.tree import live_log_names
from kseg.storage.uri import UriPath, as_path

LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


class Partition:
    """A partition directory seen through its file names and index files. ``whole_indexes``:
    see :class:`Segment`."""

    def __init__(self, pdir: str | Path | UriPath, *, whole_indexes: bool = False) -> None:
        pdir = as_path(pdir)  # a local path or a URI (kseg.storage.uri)
        self.dir = pdir
        name = F.parse_partition_dir(pdir.name)
        # a directory not named <topic>-<partition> (a loose segment file's): null, as in dump
        self.topic, self.partition = (name.topic, name.partition) if name else (None, None)
        self.state = name.state if name else None  # "delete", "future", "stray"
        self.segments = [
            Segment.listed(pdir, name, base, whole_indexes=whole_indexes)
            for base, name in live_log_names(pdir)
        ]
        self.bytes_read = 0
        self._warnings: dict[str, None] = {}  # ordered and without repeats
        # invalid data the lookups met and worked around (an index entry pointing nowhere
        # valid: Segment.start_for), ordered and without repeats: the answer stands, but the
        # files are not clean
        self._problems: dict[str, CorruptionError] = {}
        self._counted: set[tuple[int, str]] = set()  # indexes whose lookups bytes_read holds
        self._max_timestamps: dict[int, int] = {}  # base offset -> max timestamp

    @property
    def log_dir(self) -> Path:
        return self.dir.parent

    @property
    def warnings(self) -> list[str]:
        return list(self._warnings)

    def warn(self, message: str) -> None:
        self._warnings[message] = None

    @property
    def problems(self) -> list[CorruptionError]:
        return list(self._problems.values())

    # --- checkpoints -------------------------------------------------------------------------
    def checkpointed_log_start(self) -> int | None:
        """This partition's entry in <log.dir>/log-start-offset-checkpoint (None: no entry, or
        the file is missing or unreadable)."""
        path = self.log_dir / LOG_START_CHECKPOINT
        try:
            data = read_side_file(path, F.OFFSET_CHECKPOINT)
            entries = read_offset_checkpoint(data) if data.strip() else []
        except FileNotFoundError:
            return None
        except (OSError, CorruptionError) as exc:
            # said (once) rather than silently taking the first segment's base offset
            why = f"{path}: {exc.strerror}" if isinstance(exc, OSError) else str(exc.in_file(path))
            self.warn(f"{why}; the log start is taken from the first segment")
            return None
        for e in entries:
            if (e.topic, e.partition) == (self.topic, self.partition):
                return e.offset
        return None

    def leader_epochs(self) -> list[EpochEntry]:
        """leader-epoch-checkpoint's entries (raises OSError or CorruptionError)."""
        return read_leader_epoch_checkpoint(
            read_side_file(self.dir / LEADER_EPOCH_CHECKPOINT, F.LEADER_EPOCH_CHECKPOINT)
        )

    # --- log start and end -------------------------------------------------------------------
    def log_start_offset(self) -> int:
        first = self.segments[0].base_offset if self.segments else 0
        start = self.checkpointed_log_start()
        return first if start is None else max(start, first)

    def log_end_offset(self) -> int:
        """Next offset after the last valid batch (walks the last segment's tail after its index)."""
        if not self.segments:
            # Kafka's LogLoader opens an empty segment at the checkpointed log start offset
            return self.log_start_offset()
        for seg in reversed(self.segments):
            last = self._last_offset(seg)
            if last is not None:
                return last + 1
        return self.segments[0].base_offset

    def _last_offset(self, seg: Segment) -> int | None:
        last = None
        with seg.mapped() as buf:
            idx = self.offset_index(seg)
            start = 0
            if idx is not None and len(idx):
                start = self.start_position(seg, idx.entry(len(idx) - 1).offset, buf)
            for h in self._tail_headers(seg, buf, start):
                last = h[4]  # last_offset
        return last

    def _tail_headers(self, seg: Segment, buf, start: int) -> Iterator[tuple]:
        """Header rows from ``start`` (a checked index position) to the end of ``seg``'s log. A
        batch that fails its CRC or a structural problem (a torn or garbage tail) raises
        CorruptionError naming the file and byte: an answer taken from the valid part would be
        what Kafka says only after it truncated the damage, so it is no answer from these files
        (never a false "clean"; `kseg verify` says what recovery would do)."""
        try:
            for h in walk_headers(buf, start):
                self.bytes_read += HEADER_SIZE  # a header-only walk
                if not h[9]:  # crc_ok
                    raise CorruptionError(
                        f"batch at byte {h[0]} fails its CRC check",
                        kind=CRC_MISMATCH,
                        position=h[0],
                    )
                yield h
        except CorruptionError as exc:
            raise exc.in_file(seg.log) from None

    # --- indexes -----------------------------------------------------------------------------
    def _index(self, seg: Segment, kind: str):
        """The segment's usable index (None: missing or unusable, said once as a warning)."""
        idx = seg.index(kind)
        key = (seg.base_offset, kind)
        if key not in self._counted:
            self._counted.add(key)
            if not idx.usable:
                self.warn(idx.warning())
            else:
                # binary searches touch about log2(n) entries (plus the padding probe)
                v = idx.view
                self.bytes_read += (
                    v.file_size // max(v.slots, 1) * (2 * max(1, v.slots.bit_length()))
                )
        return idx.view if idx.usable else None

    def offset_index(self, seg: Segment) -> OffsetIndex | None:
        return self._index(seg, OFFSET_INDEX)

    def time_index(self, seg: Segment) -> TimeIndex | None:
        return self._index(seg, TIME_INDEX)

    def max_timestamp(self, seg: Segment) -> int:
        """The segment's max timestamp, from its time index tail (Kafka's own source for it);
        the active or uncleanly closed segment also walks the few batches after its last entry."""
        known = self._max_timestamps.get(seg.base_offset)
        if known is not None:
            return known
        tidx = self.time_index(seg)
        is_last = seg is self.segments[-1]
        if tidx is not None and not tidx.padded_bytes and not is_last:
            best = self._max_timestamps[seg.base_offset] = tidx.last_entry().timestamp
            return best
        best, start = -1, 0
        with seg.mapped() as buf:
            if tidx is not None and len(tidx):
                last = tidx.last_entry()
                best = last.timestamp
                start = self.start_position(seg, last.offset, buf)
            for h in self._tail_headers(seg, buf, start):
                best = max(best, h[5])  # max_timestamp
        self._max_timestamps[seg.base_offset] = best
        return best

    def indexed_max_timestamp(self, seg: Segment) -> int | None:
        """The max timestamp of an inactive segment from its time index's last entry (Kafka's
        own source), when the index is usable, not preallocated and not empty; None when only a
        walk of the log could tell. Reads no log (Spark's planner prunes with it)."""
        if seg is self.segments[-1]:
            return None
        tidx = self.time_index(seg)
        if tidx is None or tidx.padded_bytes or not len(tidx):
            return None
        return tidx.last_entry().timestamp

    # --- lookups -----------------------------------------------------------------------------
    def segment_for(self, offset: int) -> Segment | None:
        """The segment that would hold ``offset``: the last whose base offset is <= it."""
        chosen = None
        for seg in self.segments:
            if seg.base_offset <= offset:
                chosen = seg
            else:
                break
        return chosen

    def next_segment(self, seg: Segment) -> Segment | None:
        i = self.segments.index(seg)
        return self.segments[i + 1] if i + 1 < len(self.segments) else None

    def start_position(self, seg: Segment, offset: int, buf=None) -> int:
        """Where to scan ``seg`` from for ``offset``: Segment.start_for (the offset index's
        entry, checked; 0 without one). An entry pointing nowhere valid is kept in ``problems``
        and costs a scan from the segment's start. ``buf``: ``seg.mapped()`` if held."""
        if self.offset_index(seg) is None:  # missing or unusable: said once, as a warning
            return 0
        found = seg.start_for(offset, buf)
        if found.problem is not None:
            self._problems.setdefault(str(found.problem), found.problem)
        return found.position

    def time_start_offset(self, seg: Segment, timestamp: int) -> int:
        """The offset to scan ``seg`` from for the first record at or after ``timestamp`` (time
        index; the base offset without one)."""
        tidx = self.time_index(seg)
        return tidx.lookup(timestamp).offset if tidx is not None else seg.base_offset

    def batches_for(self, seg: Segment, offset: int) -> Iterator:
        """Entries of ``seg`` from where a scan for ``offset`` starts (``start_position``) on,
        CRC-checked: a bad one raises CorruptionError naming the file and byte."""
        with seg.mapped() as buf:
            position = self.start_position(seg, offset, buf)
            for entry in iter_entries(buf, position, validate=True, source=str(seg.log)):
                self.bytes_read += entry.size
                yield entry
