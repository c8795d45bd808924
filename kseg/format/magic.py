"""Magic dispatch in one place: what each magic's entries look like and how they are checked.

Offset, size and magic sit at the same bytes in every format (entry.py); the magic then picks
the CRC function, what it covers, the fixed header and the smallest legal size. Readers (log.py's
walks, verify, dump) consult this table instead of testing magic numbers themselves.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import NamedTuple

from kseg.format import batch, legacy
from kseg.format.crc import crc32, crc32c


class MagicFormat(NamedTuple):
    magic: int
    entry_name: str  # what Kafka calls one entry: "batch" (v2) or "message" (legacy)
    crc: Callable[..., int]
    crc_name: str
    crc_pos: int  # where the stored CRC lies
    crc_coverage_start: int  # the CRC covers [this, end of entry)
    header: struct.Struct  # the fixed-size header a header walk unpacks
    min_size: int  # the smallest legal size field (bytes after offset + size)
    reader: type  # the class that reads one entry in place
    timestamps: bool  # entries carry timestamps (magic 0 has none)

    @property
    def crc_mismatch(self) -> str:
        return f"{self.entry_name} {self.crc_name} mismatch"


V0 = MagicFormat(
    0,
    "message",
    crc32,
    "CRC-32",
    legacy.CRC_POS,
    legacy.CRC_COVERAGE_START,
    legacy.PREFIX,
    legacy.RECORD_OVERHEAD[0],
    legacy.LegacyEntry,
    False,
)
V1 = MagicFormat(
    1,
    "message",
    crc32,
    "CRC-32",
    legacy.CRC_POS,
    legacy.CRC_COVERAGE_START,
    legacy.HEADER_V1,
    legacy.RECORD_OVERHEAD[1],
    legacy.LegacyEntry,
    True,
)
V2 = MagicFormat(
    batch.MAGIC,
    "batch",
    crc32c,
    "CRC-32C",
    batch.CRC_POS,
    batch.CRC_COVERAGE_START,
    batch.HEADER,
    batch.MIN_BATCH_LENGTH,
    batch.RecordBatch,
    True,
)
FORMATS = {0: V0, 1: V1, 2: V2}
CURRENT_MAGIC = V2.magic
# Kafka: any size field below the v0 message overhead is corruption, whatever the magic
MIN_ENTRY_SIZE = V0.min_size


def format_of(magic: int) -> MagicFormat:
    """The format an entry of (signed) ``magic`` is read as, by Kafka's FileLogInputStream rule:
    a magic >= 2 is a v2 batch (a flipped 3..127 too), anything below a legacy message."""
    if magic >= CURRENT_MAGIC:
        return V2
    return V1 if magic == 1 else V0


# The same, indexed by the unsigned magic byte as stored (hot loops index this tuple).
FORMAT_BY_BYTE = tuple(format_of(b - 256 if b > 127 else b) for b in range(256))
READER_BY_BYTE = tuple(f.reader for f in FORMAT_BY_BYTE)
