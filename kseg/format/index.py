"""What `.index` and `.timeindex` share (Kafka's AbstractIndex): fixed-size big-endian entries,
zero padding at the tail of a preallocated (active) index, binary search, the sanity check.

A subclass declares its entry in wire order (``FIELDS``), which key the search runs on, the value
object an entry becomes and the checks Kafka's sanityCheck adds; everything else lives here once.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from kseg.format.errors import INVALID_INDEX, CorruptionError

PIECE = 1 << 20  # a pass over an index reads its entries in pieces of this size

# The largest index Kafka opens: AbstractIndex maps the whole file (FileChannel.map refuses a
# size above Integer.MAX_VALUE) and segment.index.bytes is an int.
MAX_INDEX_BYTES = (1 << 31) - 1


def entry_struct(fields: tuple[tuple[str, str], ...]) -> struct.Struct:
    """The big-endian struct of one entry, from its (name, struct code) fields in wire order."""
    return struct.Struct(">" + "".join(code for _, code in fields))


class Index:
    """A read-only view of an index held in ``buf`` (bytes or mmap).

    The entry count stops at zero padding (a preallocated active-segment index): the first
    all-zero entry.
    """

    FIELDS: tuple[tuple[str, str], ...] = ()
    ENTRY: struct.Struct
    ENTRY_SIZE: int
    KEY_FIELD: int  # the entry field lookup() searches on
    FILE_NAME: str  # how sanity_check's message names the file

    def __init__(self, buf, base_offset: int) -> None:
        self.buf = buf
        self.base_offset = base_offset
        self.file_size = len(buf)
        self.slots = len(buf) // self.ENTRY_SIZE
        self.entries = count_until_padding(buf, self.slots, self.ENTRY_SIZE)

    @property
    def padded_bytes(self) -> int:
        return self.file_size - self.entries * self.ENTRY_SIZE

    def __len__(self) -> int:
        return self.entries

    def _value(self, fields: tuple):  # the entry's fields -> its value object
        raise NotImplementedError

    def _not_found(self):  # what lookup() answers below the first entry
        raise NotImplementedError

    def entry(self, n: int):
        if not 0 <= n < self.entries:
            raise IndexError(n)
        pos = n * self.ENTRY_SIZE
        return self._value(self.ENTRY.unpack(self.buf[pos : pos + self.ENTRY_SIZE]))

    def __iter__(self) -> Iterator:
        value = self._value
        for piece in self.pieces():
            for fields in self.ENTRY.iter_unpack(piece):
                yield value(fields)

    def pieces(self, size: int = PIECE) -> Iterator[bytes]:
        """The entries' bytes (not the padding) in pieces of about ``size`` bytes: a pass over a
        large index holds one piece at a time (``buf`` may be read on demand:
        storage.mapped.FileSlices)."""
        step = max(1, size // self.ENTRY_SIZE) * self.ENTRY_SIZE
        end = self.entries * self.ENTRY_SIZE
        for pos in range(0, end, step):
            yield bytes(self.buf[pos : min(end, pos + step)])

    def _search(self, key: int) -> int:
        """The last entry whose search key is <= ``key`` (its key is ``KEY_FIELD``), or -1."""
        unpack, size, k = self.ENTRY.unpack, self.ENTRY_SIZE, self.KEY_FIELD
        buf = self.buf
        lo, hi = 0, self.entries - 1
        found = -1
        while lo <= hi:
            mid = (lo + hi) // 2
            if unpack(buf[mid * size : mid * size + size])[k] <= key:
                found = mid
                lo = mid + 1
            else:
                hi = mid - 1
        return found

    def _lookup(self, key: int):
        found = self._search(key)
        return self._not_found() if found < 0 else self.entry(found)

    def sanity_check(self) -> None:
        """Kafka's sanityCheck: a size that is a whole number of entries, then the subclass's
        checks of the entries (``_check_entries``)."""
        if self.file_size > MAX_INDEX_BYTES:
            raise CorruptionError(
                f"{self.FILE_NAME} file of {self.file_size} bytes: larger than Kafka can open"
                f" ({MAX_INDEX_BYTES} bytes: AbstractIndex maps the whole file and"
                " FileChannel.map refuses more)",
                kind=INVALID_INDEX,
                position=MAX_INDEX_BYTES,
            )
        if self.file_size % self.ENTRY_SIZE:
            raise CorruptionError(
                f"{self.FILE_NAME} file size {self.file_size} is not a multiple of {self.ENTRY_SIZE}",
                kind=INVALID_INDEX,
                position=self.file_size - self.file_size % self.ENTRY_SIZE,
            )
        if self.entries:
            self._check_entries()

    def _check_entries(self) -> None:
        last = self.entry(self.entries - 1)
        if last.offset < self.base_offset:
            raise self._bad_last(
                f"last offset {last.offset} is below the base offset {self.base_offset}"
            )

    def _bad_last(self, message: str) -> CorruptionError:
        return CorruptionError(
            message, kind=INVALID_INDEX, position=(self.entries - 1) * self.ENTRY_SIZE
        )


def count_until_padding(buf, slots: int, entry_size: int) -> int:
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
