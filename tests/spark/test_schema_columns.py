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
