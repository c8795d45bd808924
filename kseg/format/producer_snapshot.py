"""Producer-state `.snapshot` files (ProducerStateManager, version 1)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .crc import crc32c
from .errors import CRC_MISMATCH, INVALID_FILE, CorruptionError

HEADER = struct.Struct(">hIi")  # version, crc (CRC-32C of bytes [6, end)), entry count
CRC_COVERAGE_START = 6
ENTRY = struct.Struct(">qhiqiqiq")
ENTRY_SIZE = ENTRY.size  # 46
VERSION = 1
NO_TXN = -1


@dataclass(frozen=True, slots=True)
class ProducerEntry:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int = NO_TXN


@dataclass(frozen=True, slots=True)
class ProducerSnapshot:
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
            position=2,
            field="crc",
            stored=crc,
            computed=computed,
        )
    if count < 0 or HEADER.size + count * ENTRY_SIZE != n:
        raise CorruptionError(
            f"snapshot declares {count} entries but holds {(n - HEADER.size) / ENTRY_SIZE:g}",
            kind=INVALID_FILE,
            position=6,
            field="count",
        )
    entries = [
        ProducerEntry(*ENTRY.unpack_from(buf, HEADER.size + i * ENTRY_SIZE)) for i in range(count)
    ]
    return ProducerSnapshot(version, crc, entries)


def encode_snapshot(entries: list[ProducerEntry]) -> bytes:
    body = bytearray(struct.pack(">i", len(entries)))
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
    return struct.pack(">hI", VERSION, crc32c(bytes(body))) + bytes(body)
