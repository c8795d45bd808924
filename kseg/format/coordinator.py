"""Records of the internal topics: `__consumer_offsets` and `__transaction_state`.

Schemas from Kafka's OffsetCommitKey/Value, GroupMetadataKey/Value, TransactionLogKey/Value
(message JSON definitions): classic encoding before the first flexible version, compact strings
and tagged fields from it on. Every read is bounds-checked; a lie raises CorruptionError with
the byte position inside the key or value.
"""

from __future__ import annotations

import struct

from .errors import INVALID_RECORD, CorruptionError

_I8, _I16, _I32, _I64 = (struct.Struct(f">{c}") for c in "bhiq")

TXN_STATES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}


class Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def _fail(self, message: str) -> CorruptionError:
        return CorruptionError(
            f"{self.what}: {message}", kind=INVALID_RECORD, field=f"{self.what} byte {self.pos}"
        )

    def _fixed(self, st: struct.Struct) -> int:
        if self.pos + st.size > len(self.data):
            raise self._fail("truncated")
        (v,) = st.unpack_from(self.data, self.pos)
        self.pos += st.size
        return v

    def i8(self) -> int:
        return self._fixed(_I8)

    def i16(self) -> int:
        return self._fixed(_I16)

    def i32(self) -> int:
        return self._fixed(_I32)

    def i64(self) -> int:
        return self._fixed(_I64)

    def uvarint(self) -> int:
        value, shift = 0, 0
        while True:
            if self.pos >= len(self.data):
                raise self._fail("truncated varint")
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7
            if shift > 35:
                raise self._fail("varint too long")

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self._fail(f"length {n} exceeds the data")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def string(self, compact: bool, nullable: bool = False) -> str | None:
        n = self.uvarint() - 1 if compact else self.i16()
        if n == -1 and nullable:
            return None
        return self._take(n).decode("utf-8", "replace")

    def bytes_(self, compact: bool) -> bytes | None:
        n = self.uvarint() - 1 if compact else self.i32()
        return None if n == -1 else self._take(n)

    def array_len(self, compact: bool, nullable: bool = False) -> int | None:
        n = self.uvarint() - 1 if compact else self.i32()
        if n == -1 and nullable:
            return None
        if n < 0 or n > len(self.data) - self.pos:
            raise self._fail(f"array length {n} exceeds the data")
        return n

    def tagged(self) -> dict[int, bytes]:
        tags = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            tags[tag] = self._take(self.uvarint())
        return tags


def _b64(data: bytes | None) -> str | None:
    import base64

    return None if data is None else base64.b64encode(data).decode()


def consumer_offsets(key: bytes | None, value: bytes | None) -> dict:
    """Decode one `__consumer_offsets` record; a null value is a tombstone."""
    if key is None:
        raise CorruptionError("__consumer_offsets record without a key", kind=INVALID_RECORD)
    k = Reader(key, "key")
    kv = k.i16()
    if kv in (0, 1):
        out = {
            "record": "offset_commit",
            "key_version": kv,
            "group": k.string(False),
            "topic": k.string(False),
            "partition": k.i32(),
        }
        if value is None:
            return {**out, "tombstone": True}
        v = Reader(value, "value")
        ver = v.i16()
        flex = ver >= 4
        out.update(value_version=ver, offset=v.i64())
        out["leader_epoch"] = v.i32() if ver >= 3 else -1
        out["metadata"] = v.string(flex)
        out["commit_timestamp"] = v.i64()
        if ver == 1:
            out["expire_timestamp"] = v.i64()
        if flex:
            v.tagged()
        return out
    if kv == 2:
        out = {"record": "group_metadata", "key_version": kv, "group": k.string(False)}
        if value is None:
            return {**out, "tombstone": True}
        v = Reader(value, "value")
        ver = v.i16()
        flex = ver >= 4
        out.update(
            value_version=ver,
            protocol_type=v.string(flex),
            generation=v.i32(),
            protocol=v.string(flex, nullable=True),
            leader=v.string(flex, nullable=True),
        )
        out["current_state_timestamp"] = v.i64() if ver >= 2 else -1
        members = []
        for _ in range(v.array_len(flex)):
            m = {"member_id": v.string(flex)}
            m["group_instance_id"] = v.string(flex, nullable=True) if ver >= 3 else None
            m["client_id"] = v.string(flex)
            m["client_host"] = v.string(flex)
            m["rebalance_timeout"] = v.i32() if ver >= 1 else -1
            m["session_timeout"] = v.i32()
            m["subscription"] = _b64(v.bytes_(flex))
            m["assignment"] = _b64(v.bytes_(flex))
            if flex:
                v.tagged()
            members.append(m)
        out["members"] = members
        if flex:
            v.tagged()
        return out
    return {"record": "unknown", "key_version": kv}


def transaction_state(key: bytes | None, value: bytes | None) -> dict:
    """Decode one `__transaction_state` record; a null value is a tombstone."""
    if key is None:
        raise CorruptionError("__transaction_state record without a key", kind=INVALID_RECORD)
    k = Reader(key, "key")
    kv = k.i16()
    out = {"record": "transaction", "key_version": kv, "transactional_id": k.string(False)}
    if value is None:
        return {**out, "tombstone": True}
    v = Reader(value, "value")
    ver = v.i16()
    flex = ver >= 1
    out.update(
        value_version=ver,
        producer_id=v.i64(),
        producer_epoch=v.i16(),
        transaction_timeout_ms=v.i32(),
    )
    status = v.i8()
    out["state"] = TXN_STATES.get(status, f"UNKNOWN({status})")
    partitions = []
    n = v.array_len(flex, nullable=True)
    for _ in range(n or 0):
        topic = v.string(flex)
        ids = [v.i32() for _ in range(v.array_len(flex))]
        if flex:
            v.tagged()
        partitions.append({"topic": topic, "partitions": ids})
    out["partitions"] = partitions
    out["last_update_timestamp"] = v.i64()
    out["start_timestamp"] = v.i64()
    if flex:
        tags = v.tagged()
        if 0 in tags and len(tags[0]) == 8:
            out["previous_producer_id"] = _I64.unpack(tags[0])[0]
        if 1 in tags and len(tags[1]) == 8:
            out["next_producer_id"] = _I64.unpack(tags[1])[0]
        if 2 in tags and len(tags[2]) == 2:
            out["client_transaction_version"] = _I16.unpack(tags[2])[0]
    return out


# --- writing (fixtures): the classic encodings --------------------------------------------


def _str(s: str) -> bytes:
    b = s.encode()
    return _I16.pack(len(b)) + b


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return _I16.pack(1) + _str(group) + _str(topic) + _I32.pack(partition)


def offset_commit_value(
    offset: int, commit_timestamp: int, metadata: str = "", leader_epoch: int = -1
) -> bytes:
    return (
        _I16.pack(3)
        + _I64.pack(offset)
        + _I32.pack(leader_epoch)
        + _str(metadata)
        + _I64.pack(commit_timestamp)
    )


def group_metadata_key(group: str) -> bytes:
    return _I16.pack(2) + _str(group)


def group_metadata_value(
    protocol_type: str, generation: int, protocol: str | None, leader: str | None, ts: int
) -> bytes:
    def nstr(s: str | None) -> bytes:
        return _I16.pack(-1) if s is None else _str(s)

    return (
        _I16.pack(3)
        + _str(protocol_type)
        + _I32.pack(generation)
        + nstr(protocol)
        + nstr(leader)
        + _I64.pack(ts)
        + _I32.pack(0)
    )


def transaction_key(transactional_id: str) -> bytes:
    return _I16.pack(0) + _str(transactional_id)


def transaction_value(
    producer_id: int,
    epoch: int,
    timeout_ms: int,
    state: int,
    partitions: dict[str, list[int]],
    updated: int,
    started: int,
) -> bytes:
    out = (
        _I16.pack(0)
        + _I64.pack(producer_id)
        + _I16.pack(epoch)
        + _I32.pack(timeout_ms)
        + _I8.pack(state)
    )
    out += _I32.pack(len(partitions))
    for topic, ids in partitions.items():
        out += _str(topic) + _I32.pack(len(ids)) + b"".join(_I32.pack(i) for i in ids)
    return out + _I64.pack(updated) + _I64.pack(started)
