"""The rule by which Kafka adds index entries while it walks a segment (LogSegment.recover).

One implementation, used by the LogWriter (so fixtures carry exactly what recovery would write)
and by `kseg index rebuild`. Feed it every valid top-level entry in order; it accumulates the
encoded `.index` and `.timeindex` bytes (8 and 12 bytes an entry: memory stays small).
"""

from __future__ import annotations

from .offset_index import ENTRY as OFFSET_ENTRY
from .offset_index import OffsetPosition
from .time_index import ENTRY as TIME_ENTRY
from .time_index import TimestampOffset

DEFAULT_INDEX_INTERVAL_BYTES = 4096


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

    def add(self, last_offset: int, max_timestamp: int, size: int) -> None:
        """Account for the entry that starts at ``valid_bytes`` and is ``size`` bytes long."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.max_timestamp_offset = last_offset
        if self.valid_bytes - self._last_entry_pos > self.index_interval_bytes:
            # OffsetIndex.append only accepts a growing offset (a valid log always grows)
            if self._last_index_offset is None or last_offset > self._last_index_offset:
                self.offset_index += OFFSET_ENTRY.pack(
                    last_offset - self.base_offset, self.valid_bytes
                )
                self._last_index_offset = last_offset
            self._maybe_append_time(self.max_timestamp, self.max_timestamp_offset)
            self._last_entry_pos = self.valid_bytes
        self.valid_bytes += size

    def _maybe_append_time(self, timestamp: int, offset: int) -> None:
        if timestamp > self._last_time_ts:
            self.time_index += TIME_ENTRY.pack(timestamp, offset - self.base_offset)
            self._last_time_ts = timestamp

    def finish(self) -> None:
        """The final time-index entry recovery (and a segment roll) always attempts."""
        self._maybe_append_time(self.max_timestamp, self.max_timestamp_offset)

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
