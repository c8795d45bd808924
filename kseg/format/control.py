"""Control records: the key says which marker; an end-transaction marker's value has the epoch.

Kafka's reading rules (clients ControlRecordType.parse, EndTransactionMarker.deserializeValue):
- key: at least 4 bytes (version i16, type i16); a negative key version is rejected, a version
  above 0 is read as version 0; an unknown type id is UNKNOWN.
- end-transaction value: at least 6 bytes (version i16, coordinator epoch i32); a negative
  version is rejected, a version above 0 is read as version 0 and bytes past the first 6 are
  ignored. A verified Kafka 4.1.0 broker kept such markers and everything after them.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kseg.format.errors import INVALID_CONTROL, CorruptionError

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
CURRENT_KEY_VERSION = 0


class ControlRecord(NamedTuple):
    version: int  # the key's version
    type: int
    coordinator_epoch: int | None = None  # end-transaction markers only
    value_version: int | None = None  # end-transaction markers only
    trailing_bytes: int = 0  # end-transaction value bytes past the 6 Kafka reads

    @property
    def type_name(self) -> str:
        return CONTROL_TYPES.get(self.type, f"UNKNOWN({self.type})")

    @property
    def is_end_txn(self) -> bool:
        return self.type in (ABORT, COMMIT)

    @property
    def unusual(self) -> str | None:
        """What Kafka accepts but does not write itself (a newer version, extra bytes)."""
        parts = []
        if self.version > CURRENT_KEY_VERSION:
            parts.append(f"key version {self.version}")
        if self.value_version is not None and self.value_version > CURRENT_END_TXN_VERSION:
            parts.append(f"value version {self.value_version}")
        if self.trailing_bytes:
            parts.append(f"{self.trailing_bytes} bytes after the value's 6")
        return ", ".join(parts) or None


def _invalid(message: str) -> CorruptionError:
    return CorruptionError(message, kind=INVALID_CONTROL)


def parse_key(key: bytes | None) -> tuple[int, int]:
    """(version, type) as ControlRecordType.parse reads them; raise where it throws."""
    if key is None or len(key) < KEY.size:
        raise _invalid(f"control record key shorter than {KEY.size} bytes")
    version, ctype = KEY.unpack_from(key)
    if version < 0:
        raise _invalid(f"control record key has negative version {version}")
    return version, ctype


def parse_end_txn_value(value: bytes | None) -> tuple[int, int]:
    """(version, coordinator epoch) as EndTransactionMarker.deserializeValue reads them."""
    if value is None or len(value) < END_TXN_VALUE.size:
        size = "null" if value is None else f"{len(value)} bytes"
        raise _invalid(
            f"end transaction marker value shorter than {END_TXN_VALUE.size} bytes ({size})"
        )
    version, epoch = END_TXN_VALUE.unpack_from(value)
    if version < 0:
        raise _invalid(f"end transaction marker has negative version {version}")
    return version, epoch


def parse_control(key: bytes | None, value: bytes | None) -> ControlRecord:
    """Decode any control record (end-transaction markers and KRaft's types 2-6 alike).

    Raises for what Kafka cannot read: a short or null key, a negative key version and, for
    ABORT/COMMIT, a short or null value or a negative value version. KRaft values are not
    decoded here.
    """
    version, ctype = parse_key(key)
    if ctype in (ABORT, COMMIT):
        vversion, epoch = parse_end_txn_value(value)
        return ControlRecord(version, ctype, epoch, vversion, len(value) - END_TXN_VALUE.size)
    return ControlRecord(version, ctype)


def end_txn_marker(key: bytes | None, value: bytes | None) -> ControlRecord:
    """EndTransactionMarker.deserialize: what Kafka's producer-state replay reads from the first
    record of every control batch that has a producer id; any other type is rejected there."""
    ctl = parse_control(key, value)
    if not ctl.is_end_txn:
        raise _invalid(f"control record of type {ctl.type_name} is not an end transaction marker")
    return ctl


def end_txn_key(commit: bool, version: int = CURRENT_KEY_VERSION) -> bytes:
    return KEY.pack(version, COMMIT if commit else ABORT)


def end_txn_value(coordinator_epoch: int, version: int = CURRENT_END_TXN_VERSION) -> bytes:
    return END_TXN_VALUE.pack(version, coordinator_epoch)
