"""The format core: bytes <-> structures for every on-disk Kafka structure. Knows no paths."""

from .batch import RecordBatch, build_batch
from .control import ControlRecord
from .errors import CorruptionError, DecompressionError, KsegError
from .legacy import LegacyEntry, build_entries
from .log import iter_entries
from .offset_index import OffsetIndex, OffsetPosition
from .record import Record
from .time_index import TimeIndex, TimestampOffset

__all__ = [
    "ControlRecord",
    "CorruptionError",
    "DecompressionError",
    "KsegError",
    "LegacyEntry",
    "OffsetIndex",
    "OffsetPosition",
    "Record",
    "RecordBatch",
    "TimeIndex",
    "TimestampOffset",
    "build_batch",
    "build_entries",
    "iter_entries",
]
