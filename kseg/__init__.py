"""kseg: inspect, verify and repair Apache Kafka log segments on disk.

The library API::

    with kseg.LogWriter(partition_dir, compression="zstd") as w:
        w.append([kseg.Record(key=b"k", value=b"v", timestamp=1700000000000)])
    for batch in kseg.read_batches(partition_dir / "00000000000000000000.log"):
        for rec in batch.records():
            ...

Names are imported on first use (PEP 562), so `kseg` on the command line starts fast.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "AppendInfo": "kseg.storage.writer",
    "LogWriter": "kseg.storage.writer",
    "read_batches": "kseg.storage.segment",
    "ControlRecord": "kseg.format.control",
    "CorruptionError": "kseg.format.errors",
    "DecompressionError": "kseg.format.errors",
    "KsegError": "kseg.format.errors",
    "LegacyEntry": "kseg.format.legacy",
    "OffsetIndex": "kseg.format.offset_index",
    "Record": "kseg.format.record",
    "RecordBatch": "kseg.format.batch",
    "TimeIndex": "kseg.format.time_index",
    "iter_entries": "kseg.format.log",
    "LeaderAt": "kseg.offsets.leaders",
    "partition_leader": "kseg.offsets.leaders",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kseg' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
