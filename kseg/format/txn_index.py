"""`.txnindex`: one 34-byte entry per aborted transaction whose ABORT marker is in the segment."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from kseg.format.errors import INVALID_INDEX, CorruptionError
from kseg.format.index import PIECE, entry_struct

FIELDS = (
    ("version", "h"),  # CURRENT_VERSION
    ("producer_id", "q"),
    ("first_offset", "q"),
    ("last_offset", "q"),  # the ABORT marker's offset
    ("last_stable_offset", "q"),
)
ENTRY = entry_struct(FIELDS)
ENTRY_SIZE = ENTRY.size  # 34
VERSION_POS = 0
CURRENT_VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION


def read_entries(buf) -> Iterator[AbortedTxn]:
    """Every entry; a partial trailing entry or an unknown version raises with its position."""
    n = len(buf)
    if n % ENTRY_SIZE:
        raise CorruptionError(
            f"transaction index size {n} is not a multiple of {ENTRY_SIZE}",
            kind=INVALID_INDEX,
            position=n - n % ENTRY_SIZE,
        )
    step = PIECE // ENTRY_SIZE * ENTRY_SIZE  # ``buf`` may be read on demand, in pieces
    for at in range(0, n, step):
        piece = bytes(buf[at : min(n, at + step)])
        for i, (version, pid, first, last, lso) in enumerate(ENTRY.iter_unpack(piece)):
            if version != CURRENT_VERSION:
                raise CorruptionError(
                    f"unknown transaction index entry version {version}",
                    kind=INVALID_INDEX,
                    position=at + i * ENTRY_SIZE + VERSION_POS,
                    field="version",
                )
            yield AbortedTxn(pid, first, last, lso, version)


def encode_entries(entries) -> bytes:
    return b"".join(
        ENTRY.pack(e.version, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
        for e in entries
    )
