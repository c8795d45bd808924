"""The records of a Schema Registry's ``_schemas`` topic (Confluent Schema Registry, Karapace):
keys and values as JSON, read and written.

Keys (Confluent's @JsonPropertyOrder; Karapace writes the same names, in another order or with
``"subject": null``; readers must not care about order):

    {"keytype":"SCHEMA","subject":S,"version":N,"magic":1}
    {"keytype":"CONFIG","subject":S,"magic":0}       no subject: the global config
    {"keytype":"MODE","subject":S,"magic":0}
    {"keytype":"DELETE_SUBJECT","subject":S,"magic":0}
    {"keytype":"CLEAR_SUBJECT","subject":S,"magic":0}
    {"keytype":"NOOP","magic":0}                      an offset marker; its value is not read
    {"keytype":"CONTEXT","tenant":T,"context":C,"magic":0}

Values (null: a tombstone, the key deleted):

    SCHEMA          {"subject","version","id","schemaType"?,"references"?,"schema","deleted"}
                    schemaType absent: AVRO; references: [{"name","subject","version"}]
    CONFIG          {"subject"?,"compatibilityLevel",...}
    MODE            {"subject"?,"mode"}
    DELETE_SUBJECT  {"subject","version"}: every version up to it is deleted
    CLEAR_SUBJECT   {"subject"}

Sources: confluentinc/schema-registry core/.../storage/ (SchemaKey, SchemaValue, ConfigKey,
DeleteSubjectValue, SchemaRegistryKeyType, KafkaStoreReaderThread), Karapace's key_format.py
and schema_registry.py. Parsing checks what decoding relies on (types, ranges) and raises
ValueError naming the field; unknown fields are ignored, as the registry's Jackson reader does.
"""

from __future__ import annotations

from typing import NamedTuple

import orjson

SCHEMA, CONFIG, MODE, NOOP, DELETE_SUBJECT, CLEAR_SUBJECT, CONTEXT = (
    "SCHEMA",
    "CONFIG",
    "MODE",
    "NOOP",
    "DELETE_SUBJECT",
    "CLEAR_SUBJECT",
    "CONTEXT",
)
KEY_TYPES = (SCHEMA, CONFIG, MODE, NOOP, DELETE_SUBJECT, CLEAR_SUBJECT, CONTEXT)
SCHEMA_TYPES = ("AVRO", "PROTOBUF", "JSON")
_INT32 = (-(1 << 31), (1 << 31) - 1)


class Key(NamedTuple):
    keytype: str
    subject: str | None = None
    version: int | None = None
    magic: int = 0


def _json(data: bytes, what: str) -> dict:
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"{what} is not JSON: {exc}") from None
    if type(obj) is not dict:
        raise ValueError(f"{what} is not a JSON object")
    return obj


def _int(obj: dict, name: str, what: str, low: int = _INT32[0]) -> int:
    v = obj.get(name)
    if type(v) is not int or not low <= v <= _INT32[1]:
        raise ValueError(f"{what}: {name} {v!r} is not an int32{' >= ' + str(low) if low else ''}")
    return v


def _str(obj: dict, name: str, what: str, optional: bool = False) -> str | None:
    v = obj.get(name)
    if v is None and optional:
        return None
    if type(v) is not str:
        raise ValueError(f"{what}: {name} {v!r} is not a string")
    return v


def parse_key(data: bytes | None) -> Key:
    """A ``_schemas`` record's key; ValueError when it is not one (the registry skips the
    record, or for an unknown keytype stops reading: kseg skips it and says so)."""
    if data is None:
        raise ValueError("a record without a key")
    obj = _json(data, "the key")
    keytype = obj.get("keytype")
    if keytype not in KEY_TYPES:
        raise ValueError(f"unknown keytype {keytype!r}")
    magic = obj.get("magic", 0)
    if keytype == SCHEMA:
        if type(magic) is not int or magic not in (0, 1):
            raise ValueError(f"the key's magic {magic!r} is not 0 or 1")
        return Key(
            SCHEMA, _str(obj, "subject", "the key"), _int(obj, "version", "the key", 1), magic
        )
    subject = obj.get("subject")
    if subject is not None and type(subject) is not str:
        raise ValueError(f"the key: subject {subject!r} is not a string")
    return Key(keytype, subject, None, magic if type(magic) is int else 0)


def parse_value(key: Key, data: bytes) -> dict | None:
    """A record's value for its key; None for keys whose value carries nothing (NOOP)."""
    if key.keytype == NOOP:
        return None
    obj = _json(data, f"the {key.keytype} value")
    if key.keytype == SCHEMA:
        return check_schema_value(obj, "the SCHEMA value")
    if key.keytype == DELETE_SUBJECT:
        what = "the DELETE_SUBJECT value"
        _str(obj, "subject", what)
        _int(obj, "version", what)
    elif key.keytype == CLEAR_SUBJECT:
        _str(obj, "subject", "the CLEAR_SUBJECT value")
    return obj


def check_schema_value(obj: dict, what: str) -> dict:
    """A schema as the registry stores it or its REST API shows it, checked; returned as given."""
    if type(obj) is not dict:
        raise ValueError(f"{what} is not a JSON object")
    _str(obj, "subject", what)
    _int(obj, "version", what, 1)
    _int(obj, "id", what, 0)
    _str(obj, "schema", what)
    stype = obj.get("schemaType")
    if stype is not None and stype not in SCHEMA_TYPES:
        raise ValueError(f"{what}: schemaType {stype!r} is not one of {', '.join(SCHEMA_TYPES)}")
    refs = obj.get("references")
    if refs is not None:
        if type(refs) is not list:
            raise ValueError(f"{what}: references is not a list")
        for r in refs:
            if type(r) is not dict:
                raise ValueError(f"{what}: a reference is not an object")
            _str(r, "name", f"{what}'s reference")
            _str(r, "subject", f"{what}'s reference")
            _int(r, "version", f"{what}'s reference", -1)
    deleted = obj.get("deleted", False)
    if type(deleted) is not bool:
        raise ValueError(f"{what}: deleted {deleted!r} is not true or false")
    return obj


# -- writing, as Confluent's registry does (Karapace: ``karapace=True``) ---------------------


def _dump(obj: dict) -> bytes:
    return orjson.dumps(obj)


def schema_key(subject: str, version: int, *, karapace: bool = False) -> bytes:
    if karapace:  # Karapace's deprecated order, still on many topics
        return _dump({"subject": subject, "version": version, "magic": 1, "keytype": SCHEMA})
    return _dump({"keytype": SCHEMA, "subject": subject, "version": version, "magic": 1})


def schema_value(
    subject: str,
    version: int,
    schema_id: int,
    schema: str,
    *,
    schema_type: str = "AVRO",
    references: list[dict] | None = None,
    deleted: bool = False,
    karapace: bool = False,
) -> bytes:
    """A SCHEMA value: ``schemaType`` left out for AVRO, ``references`` when there are any."""
    obj: dict = {"subject": subject, "version": version, "id": schema_id}
    if karapace:
        obj.update(schema=schema, deleted=deleted)
        if references:
            obj["references"] = references
        if schema_type != "AVRO":
            obj["schemaType"] = schema_type
        return _dump(obj)
    if schema_type != "AVRO":
        obj["schemaType"] = schema_type
    if references:
        obj["references"] = references
    obj.update(schema=schema, deleted=deleted)
    return _dump(obj)


def subject_key(keytype: str, subject: str | None = None, *, karapace: bool = False) -> bytes:
    """A CONFIG, MODE, DELETE_SUBJECT or CLEAR_SUBJECT key (no subject: the global one)."""
    obj: dict = {"keytype": keytype}
    if subject is not None or karapace:
        obj["subject"] = subject
    obj["magic"] = 0
    return _dump(obj)


def noop_key() -> bytes:
    return _dump({"keytype": NOOP, "magic": 0})


def config_value(level: str, subject: str | None = None) -> bytes:
    obj = {} if subject is None else {"subject": subject}
    obj["compatibilityLevel"] = level
    return _dump(obj)


def mode_value(mode: str, subject: str | None = None) -> bytes:
    obj = {} if subject is None else {"subject": subject}
    obj["mode"] = mode
    return _dump(obj)


def delete_subject_value(subject: str, version: int) -> bytes:
    return _dump({"subject": subject, "version": version})


def clear_subject_value(subject: str) -> bytes:
    return _dump({"subject": subject})
