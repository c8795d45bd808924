"""Coordinator records: `__consumer_offsets`, `__transaction_state`, `__share_group_state`.

A key is ``int16 record type`` + that type's key schema (version 0, never flexible); a value is
``int16 version`` + the type's value schema at that version; a null value is a tombstone. The
schemas live in ``schemas/`` and the schema interpreter reads and writes them, so every read is
bounds-checked: a lie raises CorruptionError naming the byte inside the key or value.

The decoded form is flat: ``record`` (the key schema's name without "Key", snake_case),
``key_version`` (the record type), the key's fields, ``value_version`` and the value's fields,
every field of the schema present (those the version lacks at Kafka's default).
"""

from __future__ import annotations

import base64
import struct

from kseg.format.errors import INVALID_RECORD, CorruptionError
from kseg.format.schema import Schema, decode, decode_all, encode
from kseg.format.schemas import consumer_protocol as cp
from kseg.format.schemas import group, share, txn

_I16 = struct.Struct(">h")
TXN_STATES = txn.STATES


def _version(buf: bytes, what: str) -> int:
    if len(buf) < 2:
        raise CorruptionError(
            f"{what}: truncated: 2 bytes needed, {len(buf)} left",
            kind=INVALID_RECORD,
            field=f"{what} byte 0 (version)",
        )
    return _I16.unpack_from(buf)[0]


def _record_name(key_schema: Schema) -> str:
    return key_schema.record.removesuffix("_key")


def _decode_key(key: bytes | None, keys: dict[int, Schema], topic: str) -> tuple[int, dict]:
    if key is None:
        raise CorruptionError(f"{topic} record without a key", kind=INVALID_RECORD)
    rtype = _version(key, "key")
    sch = keys.get(rtype)
    if sch is None:
        raise CorruptionError(
            f"key: unknown {topic} record type {rtype}",
            kind=INVALID_RECORD,
            field="key byte 0 (type)",
        )
    return rtype, decode_all(sch, key, 0, 2, "key", fill=True)


def _decode(key, value, keys, values, topic: str, name: str | None = None) -> dict:
    rtype, kd = _decode_key(key, keys, topic)
    out = {"record": name or _record_name(keys[rtype]), "key_version": rtype, **kd}
    if value is None:
        out["tombstone"] = True
        return out
    version = _version(value, "value")
    out["value_version"] = version
    _check_version(values[rtype], version)
    out.update(decode_all(values[rtype], value, version, 2, "value", fill=True))
    return out


def _check_version(sch: Schema, version: int) -> None:
    if not sch.supports(version):
        raise CorruptionError(
            f"value: {sch.name} version {version} is unknown (known: {sch.valid[0]}-{sch.valid[1]})",
            kind=INVALID_RECORD,
            field="value byte 0 (version)",
        )


def consumer_offsets(key: bytes | None, value: bytes | None) -> dict:
    """Decode one `__consumer_offsets` record; a null value is a tombstone."""
    out = _decode(key, value, group.KEYS, group.VALUES, "__consumer_offsets")
    if out["key_version"] == 2 and out.get("protocol_type") == "consumer":
        for member in out["members"]:
            _consumer_protocol(member, "subscription", cp.SUBSCRIPTION)
            _consumer_protocol(member, "assignment", cp.ASSIGNMENT)
    return out


def consumer_offsets_group(key: bytes | None) -> str | None:
    """The group id of a `__consumer_offsets` key without decoding the record: every key type
    starts with its group id (``int16 type``, then ``int16 length`` + UTF-8, non-flexible).
    None when the key is too short to hold one (the full decoder then says what is wrong)."""
    if key is None or len(key) < 4:
        return None
    n = _I16.unpack_from(key, 2)[0]
    if n < 0 or 4 + n > len(key):
        return None
    return key[4 : 4 + n].decode("utf-8", "replace")


def _consumer_protocol(member: dict, name: str, sch: Schema) -> None:
    """Replace a classic member's base64 bytes by their ConsumerProtocol decoding (as Kafka's
    dump tool does); bytes that do not parse stay base64 with ``<name>_error`` beside them."""
    raw = base64.b64decode(member[name] or "")
    try:
        version = _version(raw, name)
        newest = sch.valid[1]
        if version < 0:
            raise CorruptionError(f"{name}: version {version}", field=f"{name} byte 0")
        if version > newest:  # newer clients append fields: read what we know
            data, _ = decode(sch, raw, newest, 2, what=name)
        else:
            data = decode_all(sch, raw, version, 2, what=name)
    except CorruptionError as exc:
        member[f"{name}_error"] = f"{exc.field}: {exc.message}"
        return
    member[name] = {"version": version, **data}


def transaction_state(key: bytes | None, value: bytes | None) -> dict:
    """Decode one `__transaction_state` record; a null value is a tombstone."""
    out = _decode(key, value, {0: txn.KEY}, {0: txn.VALUE}, "__transaction_state", "transaction")
    if "transaction_status" in out:
        status = out["transaction_status"]
        out["state"] = TXN_STATES.get(status, f"UNKNOWN({status})")
    return out


def share_group_state(key: bytes | None, value: bytes | None) -> dict:
    """Decode one `__share_group_state` record. The value layout changed in Kafka 4.1 without a
    version bump: the first layout that parses completely is used and named in ``layout``."""
    rtype, kd = _decode_key(key, share.KEYS, "__share_group_state")
    out = {"record": _record_name(share.KEYS[rtype]), "key_version": rtype, **kd}
    if value is None:
        out["tombstone"] = True
        return out
    version = _version(value, "value")
    out["value_version"] = version
    _check_version(share.LAYOUTS["4.1"][rtype], version)
    first_error = None
    for layout, values in share.LAYOUTS.items():
        try:
            data = decode_all(values[rtype], value, version, 2, "value", fill=True)
        except CorruptionError as exc:
            first_error = first_error or exc
            continue
        out["layout"] = layout
        out.update(data)
        return out
    raise first_error


# --- writing (fixtures): the mirror of the decoders ---------------------------------------


def encode_record(
    keys: dict[int, Schema],
    values: dict[int, Schema],
    rtype: int,
    fields: dict,
    version: int | None = None,
    tombstone: bool = False,
) -> tuple[bytes, bytes | None]:
    """(key, value) of a coordinator record from its flat fields (as the decoder gives them).
    ``version`` defaults to the newest value version; ``tombstone`` gives a null value."""
    key = _I16.pack(rtype) + encode(keys[rtype], fields, 0)
    if tombstone:
        return key, None
    sch = values[rtype]
    version = sch.valid[1] if version is None else version
    data = dict(fields)
    if rtype == 2:
        data["members"] = [_member_bytes(m) for m in fields.get("members", [])]
    return key, _I16.pack(version) + encode(sch, data, version)


def _member_bytes(member: dict) -> dict:
    """A classic member whose subscription/assignment may be given decoded (dicts)."""
    out = dict(member)
    for name, sch in (("subscription", cp.SUBSCRIPTION), ("assignment", cp.ASSIGNMENT)):
        v = out.get(name)
        if isinstance(v, dict):
            version = v.get("version", sch.valid[1])
            out[name] = _I16.pack(version) + encode(sch, v, min(version, sch.valid[1]))
    return out


def consumer_offsets_record(rtype: int, fields: dict, version: int | None = None,
                            tombstone: bool = False) -> tuple[bytes, bytes | None]:  # fmt: skip
    return encode_record(group.KEYS, group.VALUES, rtype, fields, version, tombstone)


def transaction_record(fields: dict, version: int | None = None, tombstone: bool = False):
    return encode_record({0: txn.KEY}, {0: txn.VALUE}, 0, fields, version, tombstone)


def share_state_record(rtype: int, fields: dict, layout: str = "4.1", tombstone: bool = False):
    return encode_record(share.KEYS, share.LAYOUTS[layout], rtype, fields, 0, tombstone)


def offset_commit_key(group_id: str, topic: str, partition: int) -> bytes:
    return consumer_offsets_record(1, {"group": group_id, "topic": topic, "partition": partition},
                                   tombstone=True)[0]  # fmt: skip


def offset_commit_value(
    offset: int, commit_timestamp: int, metadata: str = "", leader_epoch: int = -1
) -> bytes:
    fields = {"offset": offset, "leader_epoch": leader_epoch, "metadata": metadata,
              "commit_timestamp": commit_timestamp}  # fmt: skip
    return consumer_offsets_record(1, {"group": "", "topic": "", "partition": 0, **fields}, 3)[1]


def group_metadata_key(group_id: str) -> bytes:
    return consumer_offsets_record(2, {"group": group_id}, tombstone=True)[0]


def group_metadata_value(
    protocol_type: str, generation: int, protocol: str | None, leader: str | None, ts: int
) -> bytes:
    fields = {"group": "", "protocol_type": protocol_type, "generation": generation,
              "protocol": protocol, "leader": leader, "current_state_timestamp": ts}  # fmt: skip
    return consumer_offsets_record(2, fields, 3)[1]


def transaction_key(transactional_id: str) -> bytes:
    return transaction_record({"transactional_id": transactional_id}, tombstone=True)[0]


def transaction_value(
    producer_id: int,
    epoch: int,
    timeout_ms: int,
    state: int,
    partitions: dict[str, list[int]],
    updated: int,
    started: int,
) -> bytes:
    fields = {
        "transactional_id": "",
        "producer_id": producer_id,
        "producer_epoch": epoch,
        "transaction_timeout_ms": timeout_ms,
        "transaction_status": state,
        "transaction_partitions": [
            {"topic": t, "partition_ids": ids} for t, ids in partitions.items()
        ],
        "transaction_last_update_timestamp_ms": updated,
        "transaction_start_timestamp_ms": started,
    }
    return transaction_record(fields, 0)[1]
