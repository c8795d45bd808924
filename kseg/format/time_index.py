"""`.timeindex`: (timestamp i64, relativeOffset i32) entries, "max timestamp seen up to offset"."""

from __future__ import annotations

from typing import NamedTuple

from kseg.format.index import Index, entry_struct

FIELDS = (
    ("timestamp", "q"),  # the largest timestamp seen up to this offset
    ("relative_offset", "i"),  # offset - base offset
)
ENTRY = entry_struct(FIELDS)
ENTRY_SIZE = ENTRY.size  # 12
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024 // ENTRY_SIZE * ENTRY_SIZE  # 10,485,756


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(Index):
    """A read-only view of a time index held in ``buf`` (bytes or mmap); see OffsetIndex."""

    FIELDS = FIELDS
    ENTRY = ENTRY
    ENTRY_SIZE = ENTRY_SIZE
    KEY_FIELD = 0
    FILE_NAME = "time index"

    def _value(self, fields: tuple) -> TimestampOffset:
        ts, rel = fields
        return TimestampOffset(ts, self.base_offset + rel)

    def _not_found(self) -> TimestampOffset:
        return TimestampOffset(-1, self.base_offset)

    def last_entry(self) -> TimestampOffset:
        """Kafka's lastEntry: (-1, base offset) when empty."""
        if not self.entries:
            return self._not_found()
        return self.entry(self.entries - 1)

    def lookup(self, timestamp: int) -> TimestampOffset:
        """Largest entry with timestamp <= ``timestamp``, else (-1, base offset)."""
        return self._lookup(timestamp)

    def _check_entries(self) -> None:
        """Kafka's TimeIndex.sanityCheck: timestamps do not go back; last offset >= base."""
        first, last = self.entry(0), self.entry(self.entries - 1)
        if last.timestamp < first.timestamp:
            raise self._bad_last(
                f"last timestamp {last.timestamp} is below the first {first.timestamp}"
            )
        super()._check_entries()


def encode_entries(entries, base_offset: int) -> bytes:
    out = bytearray()
    for e in entries:
        out += ENTRY.pack(e.timestamp, e.offset - base_offset)
    return bytes(out)
