"""The Spark source's ``payload=schema``: Schema Registry framing decoded into columns beside
the raw ``key`` and ``value`` (kseg.schemas, the rules of `kseg dump --payload schema`).

- ``key_schema_id`` / ``value_schema_id``: the frame's schema id (null: not framed);
- ``key_json`` / ``value_json``: the decoded value as JSON text (null: not framed, or it does
  not decode);
- ``schema_error``: why a framed key or value does not decode (``value: unknown schema id
  99``; both, joined by ``; ``), null when everything framed decoded;
- with ``valueStruct=SUBJECT``, ``value_struct``: the value as a struct typed by the
  subject's latest Avro schema (kseg.spark.schema_struct); a value that does not read as it is
  null, and ``schema_error`` says ``value_struct: why``.

The driver replays ``_schemas`` once (or loads ``schemas``: a partition, a root, an export) and
hands the executors its versions as plain data; each executor process compiles a schema the
first time it meets its id.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pyarrow as pa

from kseg.dump.schema_events import header_ids

SCHEMA_FIELDS = [
    ("key_schema_id", pa.int32()),
    ("value_schema_id", pa.int32()),
    ("key_json", pa.string()),
    ("value_json", pa.string()),
    ("schema_error", pa.string()),
]
_DECODERS: dict[tuple, object] = {}  # this process's decoder of each registry's data
STRUCT_COLUMN = "value_struct"


_DATA: dict[tuple, tuple] = {}  # the driver's registries, by (paths, schemas): (when, data)
FRESH_SECONDS = 60  # one read's schema() and reader(), not a notebook's next read
_STRUCTS: dict[tuple, object] = {}  # this process's StructReader of each (data, subject)


def registry_data(paths: list[str], schemas: str | None) -> tuple:
    """On the driver: the registry of ``paths`` (or ``schemas``) as plain data for the
    executors (replayed once: the source asks for it for its schema and for its reader).
    ValueError (the data source's usage error) when there is none."""
    import time

    key = (tuple(paths), schemas)
    now = time.monotonic()
    got = _DATA.get(key)
    if got is None or now - got[0] > FRESH_SECONDS:  # a later read replays it again
        got = _DATA[key] = (now, _registry_data(paths, schemas))
    return got[1]


def struct_reader(data: tuple, subject: str):
    """valueStruct: the reader of ``subject``'s latest Avro schema (kseg.spark.schema_struct),
    made once per process; ValueError (a usage error) when the subject has no such version."""
    key = (data, subject)
    got = _STRUCTS.get(key)
    if got is None:
        from kseg.spark.schema_struct import StructReader, latest_avro

        dec = decoder_of(data)
        ver = latest_avro(dec.registry, subject)
        try:
            got = StructReader(dec, ver)
            _bounded(_STRUCTS)[key] = got
        except ValueError as exc:
            raise ValueError(
                f"kseg data source: option valueStruct: subject {subject!r} version "
                f"{ver.version}: {exc}"
            ) from None
    return got


def _registry_data(paths: list[str], schemas: str | None) -> tuple:
    from kseg.outcome import BadOption
    from kseg.schemas.sources import load_to_decode
    from kseg.storage.uri import as_path

    given = as_path(schemas) if schemas else None
    try:
        reg = load_to_decode([as_path(p) for p in paths], given, "payload")
    except BadOption as exc:
        raise ValueError(f"kseg data source: option {exc.option.lstrip('-')}: {exc}") from None
    import logging

    for p in reg.problems:  # as `kseg dump` says them (findings): the driver's log
        logging.getLogger("kseg.spark").warning(
            "kseg: %s: %s", p["file"] or reg.source, p["message"]
        )
    return (reg.source, tuple(reg.versions.values()), tuple(reg.removed.values()))


def decoder_of(data: tuple):
    """This process's SchemaDecoder of ``data`` (made once: compiled schemas are kept)."""
    dec = _DECODERS.get(data)
    if dec is None:
        from kseg.schemas.decoder import SchemaDecoder
        from kseg.schemas.registry import Registry

        source, versions, removed = data
        reg = Registry(source)
        for ver in versions:
            reg.add(ver)
        reg.removed.update({(v.subject, v.version): v for v in removed})
        dec = _bounded(_DECODERS)[data] = SchemaDecoder(reg)
    return dec


def _bounded(cache: dict) -> dict:
    """``cache``, emptied when it holds many: a long-lived executor meets a registry's later
    states, and each entry holds compiled schemas."""
    if len(cache) >= 8:
        cache.clear()
    return cache


def with_schema_columns(
    batches: Iterator[pa.RecordBatch], data: tuple, struct: str | None = None
) -> Iterator[pa.RecordBatch]:
    """Each records batch with the columns above appended (decoded from its key and value),
    and with ``struct`` (a subject) the value_struct column (kseg.spark.schema_struct)."""
    decode = decoder_of(data).decode
    reader = None if struct is None else struct_reader(data, struct)
    for batch in batches:
        ids: dict[str, list] = {"key": [], "value": []}
        texts: dict[str, list] = {"key": [], "value": []}
        errors: list = []
        keys = batch.column("key").to_pylist()
        values = batch.column("value").to_pylist()
        # schema ids carried in headers (a GUID): seen where the headers column is read
        names = batch.schema.names
        headers = batch.column("headers").to_pylist() if "headers" in names else None
        guid: list = []  # each value's GUID header (valueStruct reads no frame there)
        for i, (k, v) in enumerate(zip(keys, values, strict=True)):
            said = []
            named = {}
            if headers is not None and headers[i]:
                named = header_ids([(h["key"], h["value"]) for h in headers[i]])
            guid.append(named.get("value"))
            for field, raw in (("key", k), ("value", v)):
                d = decode(raw, named.get(field))
                if d is None:
                    ids[field].append(None)
                    texts[field].append(None)
                    continue
                ids[field].append(d.schema_id)
                if d.error is None:
                    texts[field].append(orjson.dumps(d.value).decode())
                else:
                    texts[field].append(None)
                    said.append(f"{field}: {d.error}")
            errors.append("; ".join(said) if said else None)
        extra = []
        if reader is not None:
            column, why = reader.column(values, guid)
            for i, reason in enumerate(why):
                if (
                    reason is not None
                    and ids["value"][i] is not None
                    and texts["value"][i] is not None
                ):
                    # a value that decoded but does not read as the latest (else said already)
                    said = f"value_struct: {reason}"
                    errors[i] = said if errors[i] is None else f"{errors[i]}; {said}"
            extra = [(pa.field(STRUCT_COLUMN, reader.type), column)]
        cols = [
            pa.array(ids["key"], pa.int32()),
            pa.array(ids["value"], pa.int32()),
            pa.array(texts["key"], pa.string()),
            pa.array(texts["value"], pa.string()),
            pa.array(errors, pa.string()),
        ] + [c for _f, c in extra]
        schema = batch.schema
        for name, typ in SCHEMA_FIELDS:
            schema = schema.append(pa.field(name, typ))
        for field, _c in extra:
            schema = schema.append(field)
        yield pa.RecordBatch.from_arrays([*batch.columns, *cols], schema=schema)
