"""Bad input is normal input: hostile schemas and payloads cost bounded time and memory, end in
one finding each, and never a crash (kseg.schemas.avro's walk in front of fastavro, protoc in
a bounded child process, upb's depth limit)."""

from __future__ import annotations

import io

import orjson
import pytest
from fastavro import parse_schema, schemaless_writer
from fastavro._read_py import schemaless_reader as py_reader
from hypothesis import given, settings
from hypothesis import strategies as st

from kseg.format import schema_registry as SR
from kseg.format.confluent_wire import write_frame
from kseg.format.record import Record
from kseg.schemas.avro import MAX_DEPTH, AvroSchema, walk
from kseg.schemas.decoder import SchemaDecoder
from kseg.schemas.registry import Registry
from kseg.storage.writer import LogWriter
from tests.helpers import events, run_kseg
from tests.schemas.wire import varint

LINKED = {"type": "record", "name": "L", "fields": [{"name": "next", "type": ["null", "L"]}]}


def _decoder(*schemas) -> SchemaDecoder:
    reg = Registry("test")
    for sid, (stype, text, *refs) in enumerate(schemas, 1):
        reg.apply(
            SR.schema_key(f"s{sid}", 1),
            SR.schema_value(f"s{sid}", 1, sid, text, schema_type=stype,
                            references=refs[0] if refs else None),
            sid,
        )  # fmt: skip
    return SchemaDecoder(reg)


def test_a_payload_nested_a_million_deep_is_a_finding_not_a_crash(tmp_path):
    """fastavro's compiled reader recurses as deep as a recursive schema's payload asks (a
    segfault at 100,000 levels, measured): the walk stops it at MAX_DEPTH. In a child process:
    a crash would be the test's answer, not the test runner's end."""
    root = tmp_path / "data"
    with LogWriter(root / "_schemas-0") as w:
        w.append([Record(SR.schema_key("l-value", 1),
                         SR.schema_value("l-value", 1, 1, orjson.dumps(LINKED).decode()))])  # fmt: skip
    with LogWriter(root / "deep-0") as w:
        w.append([Record(None, write_frame(1, b"\x02" * 1_000_000 + b"\x00"))])
        w.append([Record(None, write_frame(1, b"\x02" * 20 + b"\x00"))])
    proc = run_kseg("dump", root / "deep-0", "--payload", "schema", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    evs = events(proc.stdout)
    found = [e for e in evs if e["type"] == "schema_finding"]
    assert len(found) == 1 and f"nests deeper than {MAX_DEPTH} levels" in found[0]["message"]
    shallow = [e for e in evs if e["type"] == "record"][1]["value"]
    for _ in range(20):
        shallow = shallow["next"]
    assert shallow == {"next": None}


@pytest.mark.parametrize(
    "schema, payload, why",
    [
        ({"type": "array", "items": "null"}, varint(1 << 60) + b"\x00", "a block of"),
        ({"type": "map", "values": "null"}, varint(-(1 << 40)) + varint(3), "block of 3 bytes"),
        ({"type": "array", "items": {"type": "record", "name": "E", "fields": []}},
         varint(10**6) + b"\x00", "more than the payload can hold"),
        ("string", varint(1 << 40), "length"),
        ("bytes", varint(-3), "length -3"),
        ({"type": "enum", "name": "N", "symbols": ["A"]}, varint(1), "enum index 1 of 1"),
        (["null", "int"], varint(2), "union branch 2 of 2"),
        ("long", b"\xff" * 11, "varint longer than 10 bytes"),
        ({"type": "fixed", "name": "F", "size": 16}, b"\x00" * 3, "truncated fixed"),
        ({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 0},
         varint(4000) + b"\x01" * 4000, "a decimal of 4000 bytes for precision 4"),
        ("double", b"\x00" * 7, "truncated double"),
    ],
)  # fmt: skip
def test_what_the_walk_refuses(schema, payload, why):
    dec = _decoder(("AVRO", orjson.dumps(schema).decode()))
    got = dec.decode(write_frame(1, payload))
    assert got.error is not None and why in got.error, got


def test_schemas_that_do_not_parse_are_one_reason_each():
    deep = '{"type":"array","items":' * 5000 + '"int"' + "}" * 5000
    union = orjson.dumps([{"type": "fixed", "name": f"F{i}", "size": 1} for i in range(20_000)])
    dec = _decoder(
        ("AVRO", "{not json"), ("AVRO", '{"type":"nope"}'), ("AVRO", deep),
        ("AVRO", union.decode()), ("JSON", "[1,"),
        ("AVRO", '"int"', [{"name": "x", "subject": "missing", "version": 1}]),
    )  # fmt: skip
    reasons = [dec.decode(write_frame(i, b"\x02A")) for i in range(1, 7)]
    assert "does not parse: not JSON" in reasons[0].error
    assert "does not parse" in reasons[1].error
    assert "does not parse" in reasons[2].error  # nested beyond orjson's or Python's limit
    assert reasons[3].error is None and reasons[3].value == "A"  # a huge union: branch 1
    assert "does not parse: not JSON" in reasons[4].error
    assert "reference 'x' (subject 'missing' version 1) is not in the registry" in reasons[5].error
    assert dec._compiled[1] == reasons[0].error  # kept: the next record is not compiled again


# -- property: what fastavro writes, the walk accepts whole; what it refuses, no reader reads --

EVERYTHING = parse_schema(
    {
        "type": "record", "name": "R",
        "fields": [
            {"name": "a", "type": {"type": "array", "items": ["null", "long", "string"]}},
            {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "null"}}},
            {"name": "f", "type": {"type": "fixed", "name": "F", "size": 3}},
            {"name": "d", "type": "double"}, {"name": "b", "type": "boolean"},
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y", "Z"]}},
            {"name": "n", "type": ["null", "R"]},
        ],
    }
)  # fmt: skip

values = st.recursive(
    st.none(),
    lambda inner: st.fixed_dictionaries({
        "a": st.lists(st.one_of(st.none(), st.integers(-(1 << 63), (1 << 63) - 1), st.text(max_size=5)), max_size=5),
        "m": st.dictionaries(st.text(max_size=3), st.lists(st.none(), max_size=4), max_size=3),
        "f": st.binary(min_size=3, max_size=3),
        "d": st.floats(allow_nan=False),
        "b": st.booleans(),
        "e": st.sampled_from(["X", "Y", "Z"]),
        "n": inner,
    }),
    max_leaves=4,
).filter(lambda v: v is not None)  # fmt: skip


def _write(value) -> bytes:
    out = io.BytesIO()
    schemaless_writer(out, EVERYTHING, value)
    return out.getvalue()


@settings(max_examples=150, deadline=None)
@given(values)
def test_every_value_fastavro_writes_is_walked_to_its_end(value):
    data = _write(value)
    assert walk(data, 0, EVERYTHING, EVERYTHING["__named_schemas"]) == len(data)


@settings(max_examples=300, deadline=None)
@given(values, st.data())
def test_damaged_payloads_decode_as_pythons_reader_does_or_are_refused(value, data):
    """A payload with bytes changed: kseg decodes it (then fastavro's pure-Python reader, which
    trusts nothing kseg checks, reads the same) or gives a reason; never another exception."""
    raw = bytearray(_write(value))
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    payload = bytes(raw[:cut])
    schema = AvroSchema(orjson.dumps({k: v for k, v in EVERYTHING.items()
                                      if not k.startswith("__")}).decode(), [])  # fmt: skip
    try:
        got = schema.decode(payload, 0)
    except ValueError:
        return
    theirs = py_reader(io.BytesIO(payload), EVERYTHING, None)
    from kseg.schemas.avro import plain

    assert got == plain(theirs)


# -- Protobuf -------------------------------------------------------------------------------


def test_protobuf_schemas_that_do_not_compile_say_protocs_reason():
    deep = 'syntax = "proto3";\n' + "message M { " * 3000 + "}" * 3000
    dec = _decoder(
        ("PROTOBUF", 'syntax = "proto3"; message A { strin x = 1; }'),
        ("PROTOBUF", 'syntax = "proto3"; import "../../etc/passwd"; message A {}',
         [{"name": "../../etc/passwd", "subject": "s1", "version": 1}]),
        ("PROTOBUF", deep),
        ("PROTOBUF", 'syntax = "proto3"; import "b.proto"; message A {}'),
    )  # fmt: skip
    got = [dec.decode(write_frame(i, b"", [0])) for i in range(1, 5)]
    assert '"strin" is not defined' in got[0].error
    assert "leaves the schema's directory" in got[1].error
    assert got[2].error is not None  # protoc's own limit, or its crash: a reason either way
    assert "b.proto" in got[3].error


def test_protobuf_payloads_nested_past_upbs_limit():
    dec = _decoder(("PROTOBUF", 'syntax = "proto3"; message R { R r = 1; }'))
    payload = b""
    for _ in range(100_000):
        payload = b"\x0a" + _uvarint(len(payload)) + payload
        if len(payload) > 400_000:
            break
    got = dec.decode(write_frame(1, payload, [0]))
    assert got.error is not None and "MaxDepth" in got.error


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# -- what fastavro alone would take: every payload is walked --------------------------------


def _dag(levels: int, leaf: object = "long") -> dict:
    """A record naming the next level's type twice, ``levels`` deep: 2^levels values."""
    t: object = leaf
    for i in range(levels):
        t = {"type": "record", "name": f"N{i}", "fields": [{"name": "a", "type": t},
             {"name": "b", "type": f"N{i - 1}" if i else leaf}]}  # fmt: skip
    return t


@pytest.mark.parametrize(
    "schema, payload, why",
    [
        # a record of null fields reached twice at every level: 2^20 values from no byte
        (_dag(20, "null"), b"", "more items than the payload can hold"),
        # fastavro reads a negative index from a Python list's end: "C", not an error
        ({"type": "enum", "name": "E3", "symbols": ["A", "B", "C"]}, b"\x01", "enum index -1"),
        (["null", "string", "long"], b"\x01\x02", "union branch -1 of 3"),
        ("long", bytes.fromhex("80" * 19 + "01"), "varint longer than 10 bytes"),
        ("int", varint(1 << 40), "past 32 bits"),
        ("boolean", b"\x02", "boolean byte 2"),  # Java reads false, fastavro true
    ],
)  # fmt: skip
def test_what_fastavro_alone_would_take(schema, payload, why):
    dec = _decoder(("AVRO", orjson.dumps(schema).decode()))
    got = dec.decode(write_frame(1, payload))
    assert got.error is not None and why in got.error, got


def test_a_decimal_of_hostile_scale_does_not_parse():
    big = {
        "type": "bytes",
        "logicalType": "decimal",
        "precision": 300_000_000,
        "scale": 300_000_000,
    }
    dec = _decoder(("AVRO", orjson.dumps(big).decode()))
    got = dec.decode(write_frame(1, b"\x02\x01"))
    assert "does not parse: a decimal of precision 300000000" in got.error


def test_spark_types_do_not_grow_without_bound():
    pytest.importorskip("pyarrow")
    from kseg.spark.schema_struct import arrow_type

    p = parse_schema(_dag(40))
    with pytest.raises(ValueError, match="more than 10000 nodes"):
        arrow_type(p, p["__named_schemas"])
