"""`.index`: sparse (relativeOffset i32, position i32) entries; lookup is a binary search."""

from __future__ import annotations

from typing import NamedTuple

from kseg.format.index import Index, entry_struct

FIELDS = (
    ("relative_offset", "i"),  # offset - base offset
    ("position", "i"),  # byte position of the batch in the .log
)
ENTRY = entry_struct(FIELDS)
ENTRY_SIZE = ENTRY.size  # 8
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024  # segment.index.bytes


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(Index):
    """A read-only view of an offset index held in ``buf`` (bytes or mmap).

    The entry count stops at zero padding (a preallocated active-segment index): the first
    all-zero entry. Recovery never indexes a segment's first batch, so a real entry is never
    (base offset, position 0).
    """

    FIELDS = FIELDS
    ENTRY = ENTRY
    ENTRY_SIZE = ENTRY_SIZE
    KEY_FIELD = 0
    FILE_NAME = "index"

    def _value(self, fields: tuple) -> OffsetPosition:
        rel, pos = fields
        return OffsetPosition(self.base_offset + rel, pos)

    def _not_found(self) -> OffsetPosition:
        return OffsetPosition(self.base_offset, 0)

    def lookup(self, offset: int) -> OffsetPosition:
        """Largest entry with offset <= ``offset``, else (base offset, 0)."""
        return self._lookup(offset - self.base_offset)

    def lookup_entry(self, offset: int) -> int:
        """The number of the entry ``lookup(offset)`` answers with (-1: none, (base offset, 0));
        its byte in the file is ``n * ENTRY_SIZE``."""
        return self._search(offset - self.base_offset)

    # sanity_check (Kafka's OffsetIndex.sanityCheck): size a multiple of 8; last offset >= base


def encode_entries(entries, base_offset: int) -> bytes:
    out = bytearray()
    for e in entries:
        out += ENTRY.pack(e.offset - base_offset, e.position)
    return bytes(out)
