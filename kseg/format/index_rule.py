"""The rule by which Kafka adds index entries while it walks a segment (LogSegment.recover).

One implementation, used by the LogWriter (so fixtures carry exactly what recovery would write),
by `kseg index rebuild` and by verify's prediction of Kafka's recovery. Feed it every top-level
entry in order; it accumulates the encoded `.index` and `.timeindex` bytes (8 and 12 bytes an
entry: memory stays small).

Kafka's indexes refuse an entry that would not grow: OffsetIndex.append throws
InvalidOffsetException when the offset is not above the last entry's, TimeIndex.maybeAppend when
the offset is below the last entry's (it checks the offset before it compares timestamps, so a
refused entry need not have a larger timestamp). LogSegment.recover appends entries only every
index.interval.bytes (and one final time-index entry), so whether offsets that go backwards
make recovery throw depends on exactly where those appends fall. The builder records the first
append Kafka would refuse (``invalid``) and appends nothing after it; a log whose offsets grow
never has one.
"""

from __future__ import annotations

from typing import NamedTuple

from kseg.format.offset_index import ENTRY as OFFSET_ENTRY
from kseg.format.offset_index import OffsetPosition
from kseg.format.time_index import ENTRY as TIME_ENTRY
from kseg.format.time_index import TimestampOffset

DEFAULT_INDEX_INTERVAL_BYTES = 4096
OFFSET, TIME = "offset", "time"  # which index refused an entry


class RefusedEntry(NamedTuple):
    """An index append Kafka refuses with InvalidOffsetException (see the module docstring)."""

    index: str  # OFFSET (OffsetIndex.append) or TIME (TimeIndex.maybeAppend)
    position: int  # of the batch whose append was refused (the log's end for the final entry)
    offset: int  # the refused entry's offset
    last_offset: int  # the index's last entry's offset, which it does not exceed
    final: bool = False  # the time-index entry LogSegment.recover appends after its walk


class IndexBuilder:
    def __init__(
        self, base_offset: int, index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    ) -> None:
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.offset_index = bytearray()
        self.time_index = bytearray()
        self.valid_bytes = 0
        self._last_entry_pos = 0
        self._last_index_offset: int | None = None
        self._last_time_ts = -1  # TimeIndex.lastEntry of an empty index: (-1, base)
        self.max_timestamp = -1
        self.max_timestamp_offset = base_offset
        self.invalid: RefusedEntry | None = None  # the first append Kafka refuses

    def add(self, last_offset: int, max_timestamp: int, size: int) -> None:
        """Account for the entry that starts at ``valid_bytes`` and is ``size`` bytes long."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.max_timestamp_offset = last_offset
        if (
            self.valid_bytes - self._last_entry_pos > self.index_interval_bytes
            and self.invalid is None
        ):
            # OffsetIndex.append: only a growing offset (a valid log always grows)
            last = self._last_index_offset
            if last is not None and last_offset <= last:
                self.invalid = RefusedEntry(OFFSET, self.valid_bytes, last_offset, last)
            else:
                self.offset_index += OFFSET_ENTRY.pack(
                    last_offset - self.base_offset, self.valid_bytes
                )
                self._last_index_offset = last_offset
                self._maybe_append_time(self.max_timestamp, self.max_timestamp_offset)
            self._last_entry_pos = self.valid_bytes
        self.valid_bytes += size

    def _maybe_append_time(self, timestamp: int, offset: int, final: bool = False) -> None:
        """TimeIndex.maybeAppend: an offset below the last entry's is refused (whatever the
        timestamp); an entry is added only when the timestamp grows."""
        if self.time_index:  # the last entry's offset, from the bytes (the kernel appends too)
            last = self.base_offset + int.from_bytes(self.time_index[-4:], "big", signed=True)
            if offset < last:
                # add() appends before it counts the batch: valid_bytes is its position
                self.invalid = RefusedEntry(TIME, self.valid_bytes, offset, last, final)
                return
        if timestamp > self._last_time_ts:
            self.time_index += TIME_ENTRY.pack(timestamp, offset - self.base_offset)
            self._last_time_ts = timestamp

    def finish(self) -> None:
        """The final time-index entry recovery (and a segment roll) always attempts."""
        if self.invalid is None:
            self._maybe_append_time(self.max_timestamp, self.max_timestamp_offset, final=True)

    # decoded views, for tests and reports
    @property
    def offset_entries(self) -> list[OffsetPosition]:
        return [
            OffsetPosition(self.base_offset + r, p)
            for r, p in OFFSET_ENTRY.iter_unpack(self.offset_index)
        ]

    @property
    def time_entries(self) -> list[TimestampOffset]:
        return [
            TimestampOffset(t, self.base_offset + r)
            for t, r in TIME_ENTRY.iter_unpack(self.time_index)
        ]
