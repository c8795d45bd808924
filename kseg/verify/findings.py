"""Findings: what verify reports. Kinds are stable strings (part of the JSON interface)."""

from __future__ import annotations

from typing import NamedTuple

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
    """What one finding adds to what verify found (its exit status: kseg.cli.exit): a file
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


class Finding(NamedTuple):
    severity: str
    kind: str
    file: str
    position: int | None
    offset: int | None
    message: str
    repairable: bool = False  # fixed by truncating, rebuilding indexes or an in-place patch

    def to_event(self) -> dict:
        return {"type": "finding", **self._asdict()}


def from_error(
    exc, file: str, *, severity: str = ERROR, repairable: bool = True, note: str = ""
) -> Finding:
    """A Finding from a format-core CorruptionError; ``note`` ends its message (what Kafka does
    with it, where the error alone does not say)."""
    msg = exc.message
    if exc.field:
        msg = f"{exc.field}: {msg}"
    if exc.stored is not None or exc.computed is not None:
        msg += f" (stored {exc.stored}, computed {exc.computed})"
    msg += note
    return Finding(severity, exc.kind, exc.file or file, exc.position, exc.offset, msg, repairable)


class Patch(NamedTuple):
    """An in-place fix of bytes the CRC does not cover, proven by the CRC over all the others."""

    file: str
    position: int  # of the patched bytes in the file
    old: bytes
    new: bytes
    reason: str
