"""The Spark source's ``payload=schema``: Schema Registry framing decoded into columns beside
the raw ``key`` and ``value`` (kseg.schemas, the rules of `kseg dump --payload schema`).

- ``key_schema_id`` / ``value_schema_id``: the frame's schema id (null: not framed);
- ``key_json`` / ``value_json``: the decoded value as JSON text (null: not framed, or it does
  not decode);
- ``schema_error``: why a framed key or value does not decode (``value: unknown schema id
  99``; both, joined by ``; ``), null when everything framed decoded.

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


def registry_data(paths: list[str], schemas: str | None) -> tuple:
    """On the driver: the registry of ``paths`` (or ``schemas``) as plain data for the
    executors. ValueError (the data source's usage error) when there is none."""
    from kseg.outcome import BadOption
    from kseg.schemas.sources import load
    from kseg.storage.uri import as_path

    try:
        reg = load([as_path(p) for p in paths], as_path(schemas) if schemas else None, "payload")
    except BadOption as exc:
        raise ValueError(f"kseg data source: option {exc.option.lstrip('-')}: {exc}") from None
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
        dec = _DECODERS[data] = SchemaDecoder(reg)
    return dec


def with_schema_columns(batches: Iterator[pa.RecordBatch], data: tuple) -> Iterator[pa.RecordBatch]:
    """Each records batch with the columns above appended (decoded from its key and value)."""
    decode = decoder_of(data).decode
    for batch in batches:
        ids: dict[str, list] = {"key": [], "value": []}
        texts: dict[str, list] = {"key": [], "value": []}
        errors: list = []
        keys = batch.column("key").to_pylist()
        values = batch.column("value").to_pylist()
        # schema ids carried in headers (a GUID): seen where the headers column is read
        names = batch.schema.names
        headers = batch.column("headers").to_pylist() if "headers" in names else None
        for i, (k, v) in enumerate(zip(keys, values, strict=True)):
            said = []
            named = {}
            if headers is not None and headers[i]:
                named = header_ids([(h["key"], h["value"]) for h in headers[i]])
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
        cols = [
            pa.array(ids["key"], pa.int32()),
            pa.array(ids["value"], pa.int32()),
            pa.array(texts["key"], pa.string()),
            pa.array(texts["value"], pa.string()),
            pa.array(errors, pa.string()),
        ]
        schema = batch.schema
        for name, typ in SCHEMA_FIELDS:
            schema = schema.append(pa.field(name, typ))
        yield pa.RecordBatch.from_arrays([*batch.columns, *cols], schema=schema)
