"""`__cluster_metadata` record values and KRaft control record values, on the schema interpreter.

A metadata record value is ``uvarint frameVersion (1) | uvarint apiKey | uvarint version | body``
(Kafka's MetadataRecordSerde); the body is the apiKey's schema at that version and nothing may
follow it. `__remote_log_metadata` uses the same frame with its own apiKeys. KRaft control
records (types 2-6) carry their body with no frame, always at schema version 0.
"""

from __future__ import annotations

from kseg.format.control import KRAFT_CONTROL_NAMES
from kseg.format.errors import INVALID_RECORD, CorruptionError
from kseg.format.schema import Reader, Schema, decode_all, encode, write_uvarint
from kseg.format.schemas import kraft, metadata, remote_log

FRAME_VERSION = 1


def read_frame(value, what: str = "value") -> tuple[int, int, int]:
    """(api_key, version, body position) of a framed value; frame version 0 is an error."""
    r = Reader(value, 0, len(value), what)
    frame = r.uvarint("frame_version")
    if frame != FRAME_VERSION:
        hint = " (the Kafka 2.8 preview format, unsupported)" if frame == 0 else ""
        raise r.fail(f"metadata frame version {frame}{hint}; only 1 is known", "frame_version", 0)
    api_key = r.uvarint("api_key")
    version = r.uvarint("version")
    if version > 0x7FFF:
        raise r.fail(f"record version {version} does not fit an int16", "version")
    return api_key, version, r.pos


def decode_framed(value, schemas: dict[int, Schema], family: str) -> dict:
    if value is None:
        raise CorruptionError(f"{family} record without a value", kind=INVALID_RECORD)
    api_key, version, pos = read_frame(value)
    sch = schemas.get(api_key)
    if sch is None:
        raise CorruptionError(
            f"value: unknown {family} apiKey {api_key} (version {version})",
            kind=INVALID_RECORD,
            field="value byte 1 (api_key)",
        )
    if not sch.supports(version):
        raise CorruptionError(
            f"value: {sch.name} version {version} is unknown (known: {sch.valid[0]}-{sch.valid[1]})",
            kind=INVALID_RECORD,
            field="value byte 2 (version)" if api_key < 128 else "value (version)",
        )
    data = decode_all(sch, value, version, pos)
    return {"record": sch.record, "api_key": api_key, "version": version, "data": data}


def decode_metadata(key: bytes | None, value: bytes | None) -> dict:
    """One `__cluster_metadata` record (the key is always null and is ignored)."""
    out = decode_framed(value, metadata.BY_API_KEY, "metadata")
    if out["api_key"] == 12 and out["data"].get("name") == "metadata.version":
        name = metadata.METADATA_VERSIONS.get(out["data"]["feature_level"])
        if name:
            out["data"]["feature_level_name"] = name  # e.g. 27 -> "4.1-IV1"
    return out


def decode_remote_log_metadata(key: bytes | None, value: bytes | None) -> dict:
    """One `__remote_log_metadata` record (tiered storage); the key is ignored."""
    return decode_framed(value, remote_log.BY_API_KEY, "remote log metadata")


def encode_remote_log_metadata(api_key: int, data: dict, version: int | None = None) -> bytes:
    sch = remote_log.BY_API_KEY[api_key]
    return encode_framed(sch, data, sch.valid[1] if version is None else version)


def encode_framed(sch: Schema, data: dict, version: int) -> bytes:
    out = bytearray()
    write_uvarint(out, FRAME_VERSION)
    write_uvarint(out, sch.api_key)
    write_uvarint(out, version)
    return bytes(out) + encode(sch, data, version)


def encode_metadata(record: str | int, data: dict, version: int | None = None) -> bytes:
    """A framed metadata record value; ``record`` is an apiKey or a name (``"topic_record"``);
    ``version`` defaults to the newest."""
    sch = metadata_schema(record)
    return encode_framed(sch, data, sch.valid[1] if version is None else version)


def metadata_schema(record: str | int) -> Schema:
    if isinstance(record, int):
        return metadata.BY_API_KEY[record]
    for sch in metadata.RECORDS:
        if record in (sch.record, sch.name):
            return sch
    raise KeyError(record)


# --- KRaft control records ----------------------------------------------------------------

CONTROL_NAMES = KRAFT_CONTROL_NAMES  # how kafka-dump-log names them


def decode_kraft_control(control_type: int, value: bytes | None) -> dict:
    """The value of a KRaft control record (types 2-6)."""
    sch = kraft.BY_CONTROL_TYPE[control_type]
    if value is None:
        raise CorruptionError(f"{sch.name} control record without a value", kind=INVALID_RECORD)
    data = decode_all(sch, value, 0)
    return {"record": sch.record, "control_type": control_type, "version": 0, "data": data}


def encode_kraft_control(control_type: int, data: dict) -> bytes:
    return encode(kraft.BY_CONTROL_TYPE[control_type], data, 0)


# --- quorum-state -------------------------------------------------------------------------


def read_quorum_state(data: bytes) -> dict:
    """`__cluster_metadata-0/quorum-state`: Kafka's QuorumStateData as JSON (data_version 0:
    leaderId, leaderEpoch, votedId, appliedOffset, currentVoters; 1: leaderId, leaderEpoch,
    votedId, votedDirectoryId). Fields in snake_case; the version is checked."""
    import json

    from kseg.format.schema import snake

    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        pos = getattr(exc, "pos", None) if isinstance(exc, json.JSONDecodeError) else exc.start
        raise CorruptionError(
            f"quorum-state is not JSON: {exc}", kind="invalid_file", position=pos
        ) from None
    if not isinstance(doc, dict):
        raise CorruptionError("quorum-state is not a JSON object", kind="invalid_file", position=0)
    version = doc.get("data_version")
    if version not in (0, 1):
        raise CorruptionError(
            f"quorum-state data_version {version!r} is unknown (known: 0, 1)",
            kind="invalid_file",
            field="data_version",
        )

    def convert(v):
        if isinstance(v, dict):
            return {
                ("data_version" if k == "data_version" else snake(k[0].upper() + k[1:])): convert(x)
                for k, x in v.items()
            }
        if isinstance(v, list):
            return [convert(x) for x in v]
        return v

    return convert(doc)
