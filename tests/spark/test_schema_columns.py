"""The Spark source's payload=schema: the decoded columns beside the raw key and value are
what `kseg dump --payload schema` shows (value_json = its value, schema_error = its finding),
on the Data Source path and through `kseg spark export`'s Arrow writer."""

from __future__ import annotations

import shutil
from decimal import Decimal

import orjson
import pyarrow.parquet as pq
import pytest

import kseg
from kseg.fixtures.schemas import write_schemas_root
from tests.helpers import events, run_kseg

pytestmark = pytest.mark.spark

TOPICS = "^(payments|invoices|shipments|clicks)$"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return write_schemas_root(tmp_path_factory.mktemp("sr-spark") / "data")


def _dumped(root) -> dict:
    proc = run_kseg("dump", root, "--topic", TOPICS, "--payload", "schema", "-f", "json")
    evs = events(proc.stdout)
    out = {}
    for i, e in enumerate(evs):
        if e["type"] == "record":
            nxt = evs[i + 1] if i + 1 < len(evs) else {}
            finding = nxt.get("message") if nxt.get("type") == "schema_finding" else None
            decoded = e["value_encoding"] in ("avro", "protobuf", "json-schema")
            out[e["topic"], e["offset"]] = (
                e.get("value_schema_id"),
                e["value"] if decoded else None,
                finding,
            )
    return out


def test_the_decoded_columns_are_what_dump_shows(spark, root):
    df = kseg.spark.read(spark, [str(root)], topic=TOPICS, payload="schema")
    rows = df.select("topic", "offset", "value_schema_id", "value_json", "schema_error").collect()
    got = {
        (r.topic, r.offset): (
            r.value_schema_id,
            None if r.value_json is None else orjson.loads(r.value_json),
            None if r.schema_error is None else r.schema_error.removeprefix("value: "),
        )
        for r in rows
    }
    assert got == _dumped(root)
    # a search on decoded values, as dump's
    hits = kseg.spark.read(spark, [str(root)], topic=TOPICS, payload="schema", valueContains="EUR")
    assert sorted((r.topic, r.offset) for r in hits.select("topic", "offset").collect()) == [
        ("invoices", 0), ("payments", 0), ("payments", 2)]  # fmt: skip


def test_options_are_checked_on_the_driver(spark, root, tmp_path):
    with pytest.raises(Exception, match="payload"):
        kseg.spark.read(spark, [str(root)], payload="avro").collect()
    shutil.copytree(root / "payments-0", tmp_path / "payments-0")
    with pytest.raises(Exception, match="no _schemas topic found"):
        kseg.spark.read(spark, [str(tmp_path / "payments-0")], payload="schema").collect()
    with pytest.raises(Exception, match="none.json: no such file"):
        kseg.spark.read(spark, [str(root)], payload="schema",
                        schemas=str(tmp_path / "none.json")).collect()  # fmt: skip


def test_spark_export_writes_them(root, tmp_path):
    out = tmp_path / "out"
    proc = run_kseg("spark", "export", root, "--out", out, "--topic", "^clicks$", "--payload",
                    "schema", "-q", timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    table = pq.read_table(out)
    assert sorted(table.column("value_json").to_pylist(), key=str) == sorted(
        [orjson.dumps({"page": "/home", "ms": 120}).decode(),
         orjson.dumps({"page": "/cart", "ms": 48}).decode(), None], key=str)  # fmt: skip
    assert [e for e in table.column("schema_error").to_pylist() if e] == [
        "value: schema 7 (JSON): not JSON: unexpected character, expected a string key: line 1 "
        "column 2 (char 1)"
    ]


def test_value_struct_reads_every_version_as_the_latest(spark, root):
    """payments-value has versions 1 and 2 (2 adds tags, default []): the struct column has
    version 2's type and every Avro value resolved to it; what does not decode is null with its
    reason."""
    df = kseg.spark.read(spark, [str(root / "payments-0")], payload="schema",
                         valueStruct="payments-value")  # fmt: skip
    field = df.schema["value_struct"].dataType
    assert [f.name for f in field.fields] == ["id", "amount", "currency", "note", "tags"]
    assert str(field["amount"].dataType) == "DecimalType(9,2)"
    rows = {r.offset: r for r in df.collect()}
    assert rows[0].value_struct.asDict() == {
        "id": 1, "amount": Decimal("12.50"), "currency": "EUR", "note": None, "tags": []}  # fmt: skip
    assert rows[2].value_struct.tags == ["web", "promo"]
    assert rows[3].value_struct is None and "unknown schema id 99" in rows[3].schema_error
    # ids 9 and 10 are other subjects' ("int", "long"): they do not resolve to a Payment
    assert rows[6].value_struct is None and rows[6].value_json == "42"
    assert "as the latest" in rows[6].schema_error and rows[6].schema_error.startswith(
        "value_struct: "
    )


def test_value_struct_types_and_refusals(spark, root):
    from kseg.spark.schema_struct import arrow_type

    linked = {"type": "record", "name": "L", "fields": [{"name": "n", "type": ["null", "L"]}]}
    from fastavro import parse_schema

    p = parse_schema(linked)
    with pytest.raises(ValueError, match="recursive"):
        arrow_type(p, p["__named_schemas"])
    with pytest.raises(Exception, match="PROTOBUF, not Avro"):
        kseg.spark.read(
            spark, [str(root)], payload="schema", valueStruct="shipments-value"
        ).collect()
    with pytest.raises(Exception, match="valueStruct is for payload=schema"):
        kseg.spark.read(spark, [str(root)], valueStruct="payments-value").collect()


def _avro(sid: int, schema: dict, value, named: dict | None = None) -> bytes:
    import io

    from fastavro import parse_schema, schemaless_writer

    from kseg.format.confluent_wire import write_frame

    out = io.BytesIO()
    schemaless_writer(out, parse_schema(schema, named_schemas=dict(named or {})), value)
    return write_frame(sid, out.getvalue())


ADDR = {
    "type": "record",
    "name": "Addr",
    "namespace": "x",
    "fields": [{"name": "city", "type": "string"}],
}
USES = {"type": "record", "name": "P", "namespace": "x", "fields": [{"name": "at", "type": "x.Addr"},
        {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}}]}  # fmt: skip
E1 = {"type": "record", "name": "E", "fields": [{"name": "a", "type": "int"}]}


@pytest.fixture()
def small(tmp_path):
    import datetime as dt

    from fastavro import parse_schema

    from kseg.format import schema_registry as SR
    from kseg.format.record import Record
    from kseg.storage.writer import LogWriter

    root = tmp_path / "data"
    named: dict = {}
    parse_schema(ADDR, named_schemas=named)
    with LogWriter(root / "_schemas-0") as w:
        for k, v in [
            (SR.schema_key("addr", 1), SR.schema_value("addr", 1, 1, orjson.dumps(ADDR).decode())),
            (SR.schema_key("p-value", 1), SR.schema_value("p-value", 1, 2, orjson.dumps(USES).decode(),
             references=[{"name": "x.Addr", "subject": "addr", "version": 1}])),
            (SR.schema_key("e-value", 1), SR.schema_value("e-value", 1, 3, orjson.dumps(E1).decode())),
            (SR.schema_key("big-value", 1), SR.schema_value("big-value", 1, 4, orjson.dumps(
             {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2}).decode())),
        ]:  # fmt: skip
            w.append([Record(k, v)])
    with LogWriter(root / "p-0") as w:
        w.append([Record(None, _avro(2, USES, {"at": {"city": "Oslo"},
                                               "t": dt.time(1, 2, 3, 4000)}, named))])  # fmt: skip
    with LogWriter(root / "e-0") as w:
        w.append([Record(None, _avro(3, E1, {"a": 5}))])
    return root


def test_value_struct_with_references_and_a_time_of_day(spark, small):
    df = kseg.spark.read(spark, [str(small / "p-0")], payload="schema", valueStruct="p-value")
    (row,) = df.collect()
    assert row.value_struct.asDict(recursive=True) == {"at": {"city": "Oslo"}, "t": 3_723_004}
    with pytest.raises(Exception, match="precision 40: Spark holds 38 digits"):
        kseg.spark.read(spark, [str(small)], payload="schema", valueStruct="big-value").collect()


def test_a_later_version_after_the_dataframe_was_made_is_said(spark, small, monkeypatch):
    from kseg.fixtures.append import append_batch
    from kseg.format import schema_registry as SR
    from kseg.format.record import Record
    from kseg.spark import schema_columns

    monkeypatch.setattr(schema_columns, "FRESH_SECONDS", 0)
    df = kseg.spark.read(spark, [str(small / "e-0")], payload="schema", valueStruct="e-value")
    e2 = {**E1, "fields": [*E1["fields"], {"name": "b", "type": "int", "default": 0}]}
    append_batch(small / "_schemas-0", [Record(SR.schema_key("e-value", 2),
                 SR.schema_value("e-value", 2, 5, orjson.dumps(e2).decode()))],
                 timestamp=1_700_000_000_000)  # fmt: skip
    with pytest.raises(Exception, match="has a later version than when this DataFrame was made"):
        df.collect()
