"""Control records: the key says which marker; an end-transaction marker's value has the epoch."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .errors import INVALID_CONTROL, CorruptionError

KEY = struct.Struct(">hh")  # version, type
END_TXN_VALUE = struct.Struct(">hi")  # version, coordinator epoch

ABORT, COMMIT = 0, 1
CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
CURRENT_END_TXN_VERSION = 0
# KRaft control record types, as kafka-dump-log names them (their values: format/metadata.py)
KRAFT_CONTROL_NAMES = {
    2: "LeaderChange",
    3: "SnapshotHeader",
    4: "SnapshotFooter",
    5: "KRaftVersion",
    6: "KRaftVoters",
}


@dataclass(slots=True, frozen=True)
class ControlRecord:
    version: int
    type: int
    coordinator_epoch: int | None = None  # end-transaction markers only

    @property
    def type_name(self) -> str:
        return CONTROL_TYPES.get(self.type, f"UNKNOWN({self.type})")

    @property
    def is_end_txn(self) -> bool:
        return self.type in (ABORT, COMMIT)


def parse_control(key: bytes | None, value: bytes | None) -> ControlRecord:
    """Decode a control record's key and value; raise on what Kafka's recovery rejects."""
    if key is None or len(key) < KEY.size:
        raise CorruptionError("control record key shorter than 4 bytes", kind=INVALID_CONTROL)
    version, ctype = KEY.unpack_from(key)
    if ctype in (ABORT, COMMIT):
        if value is None or len(value) < END_TXN_VALUE.size:
            raise CorruptionError(
                "end transaction marker value shorter than 6 bytes", kind=INVALID_CONTROL
            )
        vversion, epoch = END_TXN_VALUE.unpack_from(value)
        if vversion != CURRENT_END_TXN_VERSION:
            raise CorruptionError(
                f"end transaction marker has unknown version {vversion}", kind=INVALID_CONTROL
            )
        return ControlRecord(version, ctype, epoch)
    return ControlRecord(version, ctype)


def end_txn_key(commit: bool) -> bytes:
    return KEY.pack(0, COMMIT if commit else ABORT)


def end_txn_value(coordinator_epoch: int) -> bytes:
    return END_TXN_VALUE.pack(CURRENT_END_TXN_VERSION, coordinator_epoch)
