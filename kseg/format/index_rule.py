"""The rule by which Kafka adds index entries while it walks a segment (LogSegment.recover).

One implementation, used by the LogWriter (so fixtures carry exactly what recovery would write)
and by `kseg index rebuild`. Feed it every valid top-level entry in order; it collects the
offset-index and time-index entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .offset_index import OffsetPosition
from .time_index import TimestampOffset

DEFAULT_INDEX_INTERVAL_BYTES = 4096


@dataclass(slots=True)
class IndexBuilder:
    base_offset: int
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    offset_entries: list[OffsetPosition] = field(default_factory=list)
    time_entries: list[TimestampOffset] = field(default_factory=list)
    valid_bytes: int = 0
    _last_entry_pos: int = 0
    max_timestamp: int = -1
    max_timestamp_offset: int = -1

    def __post_init__(self) -> None:
        self.max_timestamp_offset = self.base_offset

    def add(self, last_offset: int, max_timestamp: int, size: int) -> None:
        """Account for the entry that starts at ``valid_bytes`` and is ``size`` bytes long."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.max_timestamp_offset = last_offset
        if self.valid_bytes - self._last_entry_pos > self.index_interval_bytes:
            # OffsetIndex.append: only if the offset grows (recovery of a valid log always does)
            if not self.offset_entries or last_offset > self.offset_entries[-1].offset:
                self.offset_entries.append(OffsetPosition(last_offset, self.valid_bytes))
            self._maybe_append_time(self.max_timestamp, self.max_timestamp_offset)
            self._last_entry_pos = self.valid_bytes
        self.valid_bytes += size

    def _maybe_append_time(self, timestamp: int, offset: int) -> None:
        last_ts = self.time_entries[-1].timestamp if self.time_entries else -1
        if timestamp > last_ts:
            self.time_entries.append(TimestampOffset(timestamp, offset))

    def finish(self) -> None:
        """The final time-index entry recovery (and a segment roll) always attempts."""
        self._maybe_append_time(self.max_timestamp, self.max_timestamp_offset)
