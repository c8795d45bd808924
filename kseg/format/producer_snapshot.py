"""Producer-state `.snapshot` files (ProducerStateManager, version 1)."""

from __future__ import annotations

import struct
from typing import NamedTuple

from kseg.format.crc import crc32c
from kseg.format.errors import CRC_MISMATCH, INVALID_FILE, CorruptionError

# Wire order (ProducerStateManager's PRODUCER_SNAPSHOT_ENTRY_SCHEMA, version 1); positions
# derived.
HEADER_FIELDS = (
    ("version", "h"),
    ("crc", "I"),  # CRC-32C of [count, end of file)
    ("count", "i"),  # entries that follow
)
ENTRY_FIELDS = (  # the names of ProducerEntry's fields, in the same order
    ("producer_id", "q"),
    ("producer_epoch", "h"),
    ("last_sequence", "i"),
    ("last_offset", "q"),
    ("offset_delta", "i"),
    ("timestamp", "q"),
    ("coordinator_epoch", "i"),
    ("current_txn_first_offset", "q"),
)
HEADER = struct.Struct(">" + "".join(c for _, c in HEADER_FIELDS))
CRC_POS = struct.calcsize(">" + HEADER_FIELDS[0][1])  # 2
COUNT_POS = CRC_POS + struct.calcsize(">" + HEADER_FIELDS[1][1])  # 6
CRC_COVERAGE_START = COUNT_POS
_VERSION_CRC = struct.Struct(">" + "".join(c for _, c in HEADER_FIELDS[:2]))
_COUNT = struct.Struct(">" + HEADER_FIELDS[2][1])
ENTRY = struct.Struct(">" + "".join(c for _, c in ENTRY_FIELDS))
ENTRY_SIZE = ENTRY.size  # 46
VERSION = 1
NO_TXN = -1


class ProducerEntry(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int = NO_TXN


class ProducerSnapshot(NamedTuple):
    version: int
    crc: int
    entries: list[ProducerEntry]


def read_snapshot(buf) -> ProducerSnapshot:
    n = len(buf)
    if n < HEADER.size:
        raise CorruptionError(
            f"snapshot of {n} bytes is shorter than its {HEADER.size}-byte header",
            kind=INVALID_FILE,
            position=0,
        )
    version, crc, count = HEADER.unpack_from(buf, 0)
    if version != VERSION:
        raise CorruptionError(
            f"unknown snapshot version {version}", kind=INVALID_FILE, position=0, field="version"
        )
    with memoryview(buf) as mv:
        computed = crc32c(mv[CRC_COVERAGE_START:])
    if computed != crc:
        raise CorruptionError(
            "snapshot CRC-32C mismatch",
            kind=CRC_MISMATCH,
            position=CRC_POS,
            field="crc",
            stored=crc,
            computed=computed,
        )
    if count < 0 or HEADER.size + count * ENTRY_SIZE != n:
        raise CorruptionError(
            f"snapshot declares {count} entries but holds {(n - HEADER.size) / ENTRY_SIZE:g}",
            kind=INVALID_FILE,
            position=COUNT_POS,
            field="count",
        )
    entries = [
        ProducerEntry(*ENTRY.unpack_from(buf, HEADER.size + i * ENTRY_SIZE)) for i in range(count)
    ]
    return ProducerSnapshot(version, crc, entries)


def encode_snapshot(entries: list[ProducerEntry]) -> bytes:
    body = bytearray(_COUNT.pack(len(entries)))
    for e in entries:
        body += ENTRY.pack(
            e.producer_id,
            e.producer_epoch,
            e.last_sequence,
            e.last_offset,
            e.offset_delta,
            e.timestamp,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
    return _VERSION_CRC.pack(VERSION, crc32c(bytes(body))) + bytes(body)
