"""`.timeindex`: (timestamp i64, relativeOffset i32) entries, "max timestamp seen up to offset"."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import INVALID_INDEX, CorruptionError
from .offset_index import _count_until_padding

ENTRY = struct.Struct(">qi")  # timestamp, offset - base offset
ENTRY_SIZE = ENTRY.size
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024 // ENTRY_SIZE * ENTRY_SIZE  # 10,485,756


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    timestamp: int
    offset: int


class TimeIndex:
    """A read-only view of a time index held in ``buf`` (bytes or mmap); see OffsetIndex."""

    def __init__(self, buf, base_offset: int) -> None:
        self.buf = buf
        self.base_offset = base_offset
        self.file_size = len(buf)
        self.slots = len(buf) // ENTRY_SIZE
        self.entries = _count_until_padding(buf, self.slots, ENTRY_SIZE)

    @property
    def padded_bytes(self) -> int:
        return self.file_size - self.entries * ENTRY_SIZE

    def __len__(self) -> int:
        return self.entries

    def entry(self, n: int) -> TimestampOffset:
        if not 0 <= n < self.entries:
            raise IndexError(n)
        ts, rel = ENTRY.unpack_from(self.buf, n * ENTRY_SIZE)
        return TimestampOffset(ts, self.base_offset + rel)

    def __iter__(self) -> Iterator[TimestampOffset]:
        base = self.base_offset
        for ts, rel in ENTRY.iter_unpack(memoryview(self.buf)[: self.entries * ENTRY_SIZE]):
            yield TimestampOffset(ts, base + rel)

    def last_entry(self) -> TimestampOffset:
        """Kafka's lastEntry: (-1, base offset) when empty."""
        if not self.entries:
            return TimestampOffset(-1, self.base_offset)
        return self.entry(self.entries - 1)

    def lookup(self, timestamp: int) -> TimestampOffset:
        """Largest entry with timestamp <= ``timestamp``, else (-1, base offset)."""
        lo, hi = 0, self.entries - 1
        found = -1
        while lo <= hi:
            mid = (lo + hi) // 2
            ts = ENTRY.unpack_from(self.buf, mid * ENTRY_SIZE)[0]
            if ts <= timestamp:
                found = mid
                lo = mid + 1
            else:
                hi = mid - 1
        if found < 0:
            return TimestampOffset(-1, self.base_offset)
        return self.entry(found)

    def sanity_check(self) -> None:
        """Kafka's TimeIndex.sanityCheck."""
        if self.file_size % ENTRY_SIZE:
            raise CorruptionError(
                f"time index file size {self.file_size} is not a multiple of {ENTRY_SIZE}",
                kind=INVALID_INDEX,
                position=self.file_size - self.file_size % ENTRY_SIZE,
            )
        if self.entries:
            first, last = self.entry(0), self.entry(self.entries - 1)
            if last.timestamp < first.timestamp:
                raise CorruptionError(
                    f"last timestamp {last.timestamp} is below the first {first.timestamp}",
                    kind=INVALID_INDEX,
                    position=(self.entries - 1) * ENTRY_SIZE,
                )
            if last.offset < self.base_offset:
                raise CorruptionError(
                    f"last offset {last.offset} is below the base offset {self.base_offset}",
                    kind=INVALID_INDEX,
                    position=(self.entries - 1) * ENTRY_SIZE,
                )


def encode_entries(entries, base_offset: int) -> bytes:
    out = bytearray()
    for e in entries:
        out += ENTRY.pack(e.timestamp, e.offset - base_offset)
    return bytes(out)
