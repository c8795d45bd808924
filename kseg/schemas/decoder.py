"""A framed key or value decoded by the schema its id names: the value as JSON, or why not.

Schemas are compiled on first use and kept (a dump meets few ids, each many times); one that
does not compile is kept as its reason, so each record of it says the same without compiling
again."""

from __future__ import annotations

from typing import Any, NamedTuple

from kseg.format.confluent_wire import is_framed, read_frame, read_indexes
from kseg.format.errors import CorruptionError
from kseg.schemas.registry import AVRO, JSON, PROTOBUF, Registry

ENCODINGS = {AVRO: "avro", PROTOBUF: "protobuf", JSON: "json-schema"}
MAX_REFERENCE_DEPTH = 32  # references of references: deeper is a cycle or a hostile schema


class Decoded(NamedTuple):
    """A framed field: ``value`` (JSON types) and its ``encoding`` when it decoded; otherwise
    ``error`` says why (and the field is shown raw)."""

    schema_id: int | None
    value: Any = None
    encoding: str | None = None
    error: str | None = None


class SchemaDecoder:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._compiled: dict[int, Any] = {}

    def decode(self, data: bytes | None, header: str | None = None) -> Decoded | None:
        """``data`` decoded, or None when it is not framed (null, or its first byte is not the
        magic byte 0: a plain key, say) and is shown as any payload is. ``header``: the name of
        a header that carries this field's schema id (Confluent Platform 8's
        ``__value_schema_id``): the bytes then have no frame, whatever their first byte."""
        got = self.framed(data, header)
        if got is None or type(got) is Decoded:
            return got
        sid, schema, start = got
        try:
            if schema.kind == PROTOBUF:
                try:
                    indexes, start = read_indexes(data, start)
                except CorruptionError as exc:
                    return Decoded(sid, error=f"message indexes: {exc.message}")
                value = schema.decode(data, start, indexes)
            else:
                value = schema.decode(data, start)
        except ValueError as exc:
            return Decoded(sid, error=f"schema {sid} ({schema.kind}): {exc}")
        except RecursionError:
            return Decoded(sid, error=f"schema {sid} ({schema.kind}): the value nests too deeply")
        except Exception as exc:  # a library's own error on bytes from the disk: a finding
            return Decoded(sid, error=f"schema {sid} ({schema.kind}): {type(exc).__name__}: {exc}")
        return Decoded(sid, value, ENCODINGS[schema.kind])

    def framed(self, data: bytes | None, header: str | None = None):
        """A field's frame: (schema id, its compiled schema, where what follows the frame's
        header starts); None when it is not framed; a Decoded saying why when it cannot be read
        as one (see ``decode``)."""
        if header is not None and data is not None:
            return Decoded(None, error=f"its schema is named by a GUID in header {header}, "
                           "which kseg cannot resolve offline")  # fmt: skip
        if not is_framed(data):
            return None
        try:
            frame = read_frame(data)
        except CorruptionError as exc:
            return Decoded(None, error=exc.message)
        schema = self._schema(frame.schema_id)
        if isinstance(schema, str):
            return Decoded(frame.schema_id, error=schema)
        return frame.schema_id, schema, frame.start

    def _schema(self, sid: int):
        """The compiled schema of ``sid``, or the reason (a str) there is none. Only ids the
        registry knows are kept: the ids of unknown ones come from the data (a topic of binary
        values whose first byte is 0 names millions)."""
        got = self._compiled.get(sid)
        if got is None:
            if sid not in self.registry.by_id:
                return f"unknown schema id {sid} ({self.registry.describe()})"
            got = self._compiled[sid] = self._compile(sid)
        return got

    def _compile(self, sid: int):
        reg = self.registry.by_id[sid]  # _schema asks only for ids the registry knows
        try:
            # JSON Schema values are shown as JSON: its references are not needed to decode
            refs = (
                []
                if reg.schema_type == JSON
                else self.registry.referenced(reg, MAX_REFERENCE_DEPTH)
            )
            if reg.schema_type == AVRO:
                from kseg.schemas.avro import AvroSchema

                compiled = AvroSchema(reg.schema, [r.schema for _name, r in refs])
            elif reg.schema_type == PROTOBUF:
                from kseg.schemas.protobuf import ProtobufSchema

                compiled = ProtobufSchema(reg.schema, [(name, r.schema) for name, r in refs])
            elif reg.schema_type == JSON:
                from kseg.schemas.json_schema import JsonSchema

                compiled = JsonSchema(reg.schema, [])
            else:
                return f"schema {sid} has type {reg.schema_type!r}, which kseg does not decode"
        except ValueError as exc:
            return f"schema {sid} ({reg.schema_type}) does not parse: {exc}"
        compiled.kind = reg.schema_type
        return compiled
