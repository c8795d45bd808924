"""`.index`: sparse (relativeOffset i32, position i32) entries; lookup is a binary search."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import INVALID_INDEX, CorruptionError

ENTRY = struct.Struct(">ii")  # offset - base offset, byte position in the .log
ENTRY_SIZE = ENTRY.size
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024  # segment.index.bytes


@dataclass(frozen=True, slots=True)
class OffsetPosition:
    offset: int
    position: int


class OffsetIndex:
    """A read-only view of an offset index held in ``buf`` (bytes or mmap).

    The entry count stops at zero padding (a preallocated active-segment index): the first
    all-zero entry. Recovery never indexes a segment's first batch, so a real entry is never
    (base offset, position 0).
    """

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

    def entry(self, n: int) -> OffsetPosition:
        if not 0 <= n < self.entries:
            raise IndexError(n)
        rel, pos = ENTRY.unpack_from(self.buf, n * ENTRY_SIZE)
        return OffsetPosition(self.base_offset + rel, pos)

    def __iter__(self) -> Iterator[OffsetPosition]:
        base = self.base_offset
        for rel, pos in ENTRY.iter_unpack(memoryview(self.buf)[: self.entries * ENTRY_SIZE]):
            yield OffsetPosition(base + rel, pos)

    def lookup(self, offset: int) -> OffsetPosition:
        """Largest entry with offset <= ``offset``, else (base offset, 0)."""
        lo, hi = 0, self.entries - 1
        found = -1
        rel_target = offset - self.base_offset
        while lo <= hi:
            mid = (lo + hi) // 2
            rel = ENTRY.unpack_from(self.buf, mid * ENTRY_SIZE)[0]
            if rel <= rel_target:
                found = mid
                lo = mid + 1
            else:
                hi = mid - 1
        if found < 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry(found)

    def sanity_check(self) -> None:
        """Kafka's OffsetIndex.sanityCheck: size a multiple of 8; last offset >= base."""
        if self.file_size % ENTRY_SIZE:
            raise CorruptionError(
                f"index file size {self.file_size} is not a multiple of {ENTRY_SIZE}",
                kind=INVALID_INDEX,
                position=self.file_size - self.file_size % ENTRY_SIZE,
            )
        if self.entries:
            last = self.entry(self.entries - 1)
            if last.offset < self.base_offset:
                raise CorruptionError(
                    f"last offset {last.offset} is below the base offset {self.base_offset}",
                    kind=INVALID_INDEX,
                    position=(self.entries - 1) * ENTRY_SIZE,
                )


def _count_until_padding(buf, slots: int, entry_size: int) -> int:
    """Entries before the zero padding of a preallocated index (a zero-filled tail).

    Binary search for the first all-zero slot: every all-zero slot at the tail is padding.
    """
    zero = bytes(entry_size)

    def is_zero(n: int) -> bool:
        return buf[n * entry_size : (n + 1) * entry_size] == zero

    if slots == 0 or not is_zero(slots - 1):
        return slots
    lo, hi = 0, slots - 1  # the first zero slot lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if is_zero(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def encode_entries(entries, base_offset: int) -> bytes:
    out = bytearray()
    for e in entries:
        out += ENTRY.pack(e.offset - base_offset, e.position)
    return bytes(out)
