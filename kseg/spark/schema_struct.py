"""The Spark source's ``valueStruct=SUBJECT`` (with ``payload=schema``): Avro values as a
struct column typed by the subject's latest Avro schema, ``value_struct``.

A topic's values may be written with several versions of a subject; a column has one type. So
each value is read with its writer's schema (the id in its frame) and resolved to the
subject's latest version by Avro's schema resolution (fastavro's reader schema: fields added
with defaults, removed, promoted), as a consumer with ``use.latest.version`` reads it. A value
that does not resolve, or is not Avro, is null in the column, with the reason in
``schema_error``.

The Arrow types (Spark's from_avro mapping): boolean, int (int32), long (int64), float, double,
bytes and fixed (binary), string and enum (string), record (struct), array (list), map
(map<string, T>), a union of null and one type (that type, nullable), decimal (decimal128; past
38 digits Spark has no type: the option fails), date (date32), time-millis/-micros (int32 ms /
int64 us since midnight: Spark has no time of day), timestamp-millis/-micros (timestamp[us,
UTC]), local-timestamp-* (timestamp[us]), uuid (string). Two differences, on purpose: a union of several non-null types is a string column of
its value as JSON (Spark makes a struct of ``member0``, ``member1``... that no JSON reader
fills), and a recursive schema has no Spark type: the option fails on the driver.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson
import pyarrow as pa

COLUMN = "value_struct"
_PRIMITIVES = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}
_LOGICAL = {
    "date": pa.date32(),
    "timestamp-millis": pa.timestamp("us", tz="UTC"),
    "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "local-timestamp-millis": pa.timestamp("us"),
    "local-timestamp-micros": pa.timestamp("us"),
}


def latest_avro(registry, subject: str):
    """The subject's latest live version; ValueError when there is none or it is not Avro."""
    mine = [v for (s, _n), v in registry.versions.items() if s == subject and not v.deleted]
    if not mine:
        raise ValueError(
            f"kseg data source: option valueStruct: no live version of subject {subject!r}"
        )
    ver = max(mine, key=lambda v: v.version)
    if ver.schema_type != "AVRO":
        raise ValueError(
            f"kseg data source: option valueStruct: subject {subject!r} version {ver.version} "
            f"is {ver.schema_type}, not Avro"
        )
    return ver


MAX_TYPE_NODES = 10_000  # a Spark type is a tree: a type named twice at every level doubles it


def arrow_type(schema, named: dict) -> tuple[pa.DataType, Callable | None]:
    """(Arrow type, converter of a fastavro value to what pyarrow takes for it, or None: as it
    is). ValueError for a recursive schema, or one whose type tree passes MAX_TYPE_NODES."""
    count = [0]
    try:
        return _type(schema, named, (), count)
    except RecursionError:
        raise ValueError("the schema nests too deeply for a Spark type") from None


def _type(s, named: dict, seen: tuple, count: list) -> tuple[pa.DataType, Callable | None]:
    count[0] += 1
    if count[0] > MAX_TYPE_NODES:
        raise ValueError(f"the schema's Spark type would have more than {MAX_TYPE_NODES} nodes")
    if type(s) is str:
        if s in _PRIMITIVES:
            return _PRIMITIVES[s], None
        if s in seen:
            raise ValueError(f"the schema is recursive ({s} holds itself): no Spark type")
        return _type(named[s], named, (*seen, s), count)
    if type(s) is list:
        branches = [b for b in s if b != "null"]
        if len(branches) == 1:
            return _type(branches[0], named, seen, count)
        if not branches:
            return pa.null(), None
        from kseg.schemas.avro import plain

        return pa.string(), lambda v: None if v is None else orjson.dumps(plain(v)).decode()
    t = s["type"]
    logical = s.get("logicalType")
    if logical == "decimal" and t in ("bytes", "fixed"):
        p, scale = int(s.get("precision", 38)), int(s.get("scale", 0))
        if p > 38:
            raise ValueError(f"a decimal of precision {p}: Spark holds 38 digits")
        return pa.decimal128(p, scale), None
    if logical in _LOGICAL and t in ("int", "long"):
        return _LOGICAL[logical], None
    if logical in ("time-millis", "time-micros") and t in ("int", "long"):
        # Spark has no time of day type: the number, as Spark's from_avro reads it (ms or us
        # since midnight)
        unit = 1000 if logical == "time-millis" else 1_000_000
        typ = pa.int32() if logical == "time-millis" else pa.int64()
        return typ, lambda v: None if v is None else _since_midnight(v, unit)
    if logical == "uuid":
        return pa.string(), lambda v: None if v is None else str(v)
    name = s.get("name")
    if t in ("record", "error"):
        inner = (*seen, name) if name else seen
        fields, convs = [], {}
        for f in s["fields"]:
            ft, conv = _type(f["type"], named, inner, count)
            fields.append(pa.field(f["name"], ft))
            if conv is not None:
                convs[f["name"]] = conv
        if not convs:
            return pa.struct(fields), None
        return pa.struct(fields), lambda v: None if v is None else {
            k: (convs[k](x) if k in convs else x) for k, x in v.items()
        }  # fmt: skip
    if t == "enum":
        return pa.string(), None
    if t == "fixed":
        return pa.binary(), None
    if t == "array":
        it, conv = _type(s["items"], named, seen, count)
        return pa.list_(it), (
            None if conv is None else lambda v: None if v is None else [conv(x) for x in v]
        )
    if t == "map":
        vt, conv = _type(s["values"], named, seen, count)
        return pa.map_(pa.string(), vt), (
            None if conv is None else lambda v: None if v is None else {k: conv(x) for k, x in v.items()}
        )  # fmt: skip
    return _type(t, named, seen, count)  # {"type": "int"} and other wrapped names


def _since_midnight(v, per_second: int) -> int:
    seconds = v.hour * 3600 + v.minute * 60 + v.second
    return seconds * per_second + v.microsecond * per_second // 1_000_000


class StructReader:
    """Reads framed Avro values as the subject's latest schema (see the module)."""

    def __init__(self, decoder, version) -> None:
        from kseg.schemas.avro import AvroSchema
        from kseg.schemas.decoder import MAX_REFERENCE_DEPTH

        self.decoder = decoder
        refs = decoder.registry.referenced(version, MAX_REFERENCE_DEPTH)
        self.reader = AvroSchema(version.schema, [r.schema for _name, r in refs])
        self.type, self.convert = arrow_type(self.reader.parsed, self.reader.named)

    def value(self, data: bytes | None, header: str | None = None):
        """(the value as pyarrow takes it, or None; the reason it is None, or None: not framed).
        ``header``: a header naming the value's schema (a GUID): no frame to read."""
        from kseg.schemas.decoder import Decoded

        got = self.decoder.framed(data, header)
        if got is None or type(got) is Decoded:
            return None, None if got is None else got.error
        sid, writer, start = got
        if writer.kind != "AVRO":
            return None, f"schema {sid} is {writer.kind}, not Avro"
        try:
            value = writer.read(data, start, self.reader.parsed)
        except ValueError as exc:
            return None, f"schema {sid} (AVRO) as the latest: {exc}"
        return (value if self.convert is None else self.convert(value)), None

    def column(self, values: list, headers: list) -> tuple[pa.Array, list]:
        """The column of a batch's values (``headers``: each one's GUID header, or None), and
        each row's reason (or None)."""
        rows, why = [], []
        for v, h in zip(values, headers, strict=True):
            got, reason = self.value(v, h)
            rows.append(got)
            why.append(reason)
        try:
            return pa.array(rows, type=self.type), why
        except (pa.ArrowException, ValueError, TypeError, OverflowError):
            pass
        out = []  # a value pyarrow refuses (a decimal past its precision): that row alone null
        for i, r in enumerate(rows):
            try:
                pa.array([r], type=self.type)
                out.append(r)
            except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
                out.append(None)
                why[i] = f"no {COLUMN} for it: {exc}"
        return pa.array(out, type=self.type), why
