"""Findings: what verify reports. Kinds are stable strings (part of the JSON interface)."""

from __future__ import annotations

from kseg.format.value_class import FrozenValue, Value, init
from kseg.outcome import Outcome

ERROR, WARNING, INFO = "error", "warning", "info"

# kinds beyond the format core's CorruptionError kinds
OFFSETS_NOT_INCREASING = "offsets_not_increasing"
BAD_BASE_OFFSET = "bad_base_offset"  # a v2 batch whose baseOffset (outside the CRC) lies
OFFSET_OUT_OF_RANGE = "offset_out_of_range"
INVALID_BATCH = "invalid_batch"
INDEX_MISMATCH = "index_mismatch"
INDEX_PADDING = "index_padding"
MISSING_INDEX = "missing_index"
SEGMENT_OVERLAP = "segment_overlap"
SEGMENT_NAME = "segment_name_mismatch"
ORPHAN_FILE = "orphan_file"
LEFTOVER_FILE = "leftover_file"
CHECKPOINT = "checkpoint_inconsistent"
UNREADABLE = "unreadable"
NO_SEGMENTS = "no_segments"  # a partition dir without a .log (info)
TIMESTAMP = "timestamp_inconsistent"
BAD_MAGIC = "bad_magic"  # a v2 batch whose magic byte (outside the CRC) is wrong
CONTROL_VERSION = "control_version"  # a marker Kafka accepts and reads as version 0
BELOW_LOG_START = "below_log_start"  # the log ends below log-start-offset-checkpoint
LEADER_EPOCH = "leader_epoch_mismatch"  # partitionLeaderEpoch contradicts the checkpoint
TIMESTAMP_RANGE = "timestamp_out_of_range"  # valid for Kafka, but no date (years 0001-9999)


def finding_outcome(kind: str, severity: str) -> Outcome:
    """What one finding adds to what verify found (its exit status: kseg.exitcodes): a file
    kseg could not read is unreadable (exit 8), any other error invalid data (exit 4), a warning
    or an info nothing. The one rule for `kseg verify` and `kseg spark verify`.

    Severity is decided by what Kafka does on its next start (README, "What makes exit 4"):
    error = Kafka would lose or change data or fail to start, or consumers would fail;
    warning = Kafka starts and loses nothing, but repairs or ignores something on its own;
    info = nothing to do. So `kseg verify DIR && start the broker` starts a broker that loses
    nothing."""
    if kind == UNREADABLE:
        return Outcome.UNREADABLE
    return Outcome.INVALID_DATA if severity == ERROR else Outcome.OK


class Finding(Value):
    severity: str
    kind: str
    file: str
    position: int | None
    offset: int | None
    message: str
    repairable: bool  # fixed by truncating, rebuilding indexes or an in-place patch

    __slots__ = ("severity", "kind", "file", "position", "offset", "message", "repairable")

    def __init__(
        self,
        severity: str,
        kind: str,
        file: str,
        position: int | None,
        offset: int | None,
        message: str,
        repairable: bool = False,
    ) -> None:
        self.severity = severity
        self.kind = kind
        self.file = file
        self.position = position
        self.offset = offset
        self.message = message
        self.repairable = repairable

    def to_event(self) -> dict:
        return {"type": "finding", **self.as_dict()}


def from_error(exc, file: str, *, severity: str = ERROR, repairable: bool = True) -> Finding:
    """A Finding from a format-core CorruptionError."""
    msg = exc.message
    if exc.field:
        msg = f"{exc.field}: {msg}"
    if exc.stored is not None or exc.computed is not None:
        msg += f" (stored {exc.stored}, computed {exc.computed})"
    return Finding(severity, exc.kind, exc.file or file, exc.position, exc.offset, msg, repairable)


class Patch(FrozenValue):
    """An in-place fix of bytes the CRC does not cover, proven by the CRC over all the others."""

    file: str
    position: int  # of the patched bytes in the file
    old: bytes
    new: bytes
    reason: str

    __slots__ = ("file", "position", "old", "new", "reason")

    def __init__(self, file: str, position: int, old: bytes, new: bytes, reason: str) -> None:
        init(self, "file", file)
        init(self, "position", position)
        init(self, "old", old)
        init(self, "new", new)
        init(self, "reason", reason)
