"""kseg: inspect, verify and repair Apache Kafka log segments on disk.

The library API (no CLI dependencies are imported here)::

    with kseg.LogWriter(partition_dir, compression="zstd") as w:
        w.append([kseg.Record(key=b"k", value=b"v", timestamp=1700000000000)])
    for batch in kseg.read_batches(partition_dir / "00000000000000000000.log"):
        for rec in batch.records():
            ...
"""

from .format import (
    ControlRecord,
    CorruptionError,
    DecompressionError,
    KsegError,
    LegacyEntry,
    OffsetIndex,
    Record,
    RecordBatch,
    TimeIndex,
    iter_entries,
)
from .storage.segment import read_batches
from .storage.writer import AppendInfo, LogWriter

__version__ = "0.1.0"

__all__ = [
    "AppendInfo",
    "ControlRecord",
    "CorruptionError",
    "DecompressionError",
    "KsegError",
    "LegacyEntry",
    "LogWriter",
    "OffsetIndex",
    "Record",
    "RecordBatch",
    "TimeIndex",
    "iter_entries",
    "read_batches",
]
