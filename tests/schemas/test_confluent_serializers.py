"""Values framed by Confluent's own serializers (confluent-kafka's Avro, Protobuf and JSON
Schema serializers, with its mock registry client), their schemas written into `_schemas` as
the registry stores them, a log written by kseg's writer: `kseg dump --payload schema` shows
exactly what the producer serialized, and what Confluent's deserializers read back."""

from __future__ import annotations

import datetime as dt
import importlib
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import Path

import orjson
import pytest

pytest.importorskip("confluent_kafka.schema_registry")

from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.json_schema import JSONSerializer  # noqa: E402
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from kseg.format import schema_registry as SR  # noqa: E402
from kseg.format.record import Record  # noqa: E402
from kseg.storage.writer import LogWriter  # noqa: E402
from tests.helpers import events, run_kseg  # noqa: E402

AVRO = {
    "type": "record", "name": "Everything", "namespace": "t",
    "fields": [
        {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
        {"name": "f", "type": "float"}, {"name": "d", "type": "double"},
        {"name": "b", "type": "boolean"}, {"name": "s", "type": "string"},
        {"name": "raw", "type": "bytes"},
        {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
        {"name": "arr", "type": {"type": "array", "items": "long"}},
        {"name": "m", "type": {"type": "map", "values": ["null", "string"]}},
        {"name": "u", "type": ["null", "string", "long"]},
        {"name": "inner", "type": {"type": "record", "name": "Inner",
                                   "fields": [{"name": "x", "type": "int"}]}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10,
                                   "scale": 3}},
    ],
}  # fmt: skip
UID = uuid.UUID("12345678-1234-5678-1234-567812345678")
AVRO_VALUES = [
    {"i": -5, "l": 1 << 40, "f": 1.5, "d": -0.25, "b": True, "s": "héllo", "raw": b"\x00\xff",
     "fx": b"abcd", "e": "GREEN", "arr": [1, -2, 3], "m": {"k": "v", "n": None}, "u": 7,
     "inner": {"x": 1}, "day": dt.date(2024, 2, 29),
     "at": dt.datetime(2024, 2, 29, 12, 0, 1, 500000, tzinfo=dt.timezone.utc), "id": str(UID),
     "price": Decimal("-12.345")},
    {"i": 0, "l": 0, "f": 0.0, "d": 0.0, "b": False, "s": "", "raw": b"", "fx": b"\x00\x00\x00\x00",
     "e": "RED", "arr": [], "m": {}, "u": None, "inner": {"x": 0}, "day": dt.date(1970, 1, 1),
     "at": dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc), "id": str(UID), "price": Decimal("0.000")},
]  # fmt: skip
# what kseg shows for them (docs/commands/dump.md: Avro as JSON)
AVRO_SHOWN = [
    {"i": -5, "l": 1 << 40, "f": 1.5, "d": -0.25, "b": True, "s": "héllo", "raw": "\u0000\u00ff",
     "fx": "abcd", "e": "GREEN", "arr": [1, -2, 3], "m": {"k": "v", "n": None}, "u": 7,
     "inner": {"x": 1}, "day": "2024-02-29", "at": "2024-02-29T12:00:01.500000+00:00",
     "id": str(UID), "price": "-12.345"},
    {"i": 0, "l": 0, "f": 0.0, "d": 0.0, "b": False, "s": "", "raw": "", "fx": "\u0000" * 4,
     "e": "RED", "arr": [], "m": {}, "u": None, "inner": {"x": 0}, "day": "1970-01-01",
     "at": "1970-01-01T00:00:00+00:00", "id": str(UID), "price": "0.000"},
]  # fmt: skip
PROTO = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  string who = 2;
}
message Basket {
  repeated Item items = 1;
  google.protobuf.Timestamp at = 2;
  message Item {
    string sku = 1;
    int32 qty = 2;
    map<string, string> attrs = 3;
  }
}
"""
JSON_SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "array"}}}
JSON_VALUES = [{"a": 1, "b": [True, None, "x"]}, {"a": -7, "b": []}]


def _ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def _pb2(tmp_path: Path):
    """The Python classes protoc generates for PROTO (the producer's code)."""
    src = tmp_path / "pb"
    src.mkdir()
    (src / "shop.proto").write_text(PROTO)
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{src}", f"--python_out={src}",
         "shop.proto"], check=True)  # fmt: skip
    sys.path.insert(0, str(src))
    try:
        return importlib.import_module("shop_pb2")
    finally:
        sys.path.remove(str(src))


@pytest.fixture(scope="module")
def produced(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("confluent")
    client = SchemaRegistryClient.new_client({"url": "mock://kseg-tests"})
    root = tmp / "data"
    framed: dict[str, list[bytes]] = {}
    ser = AvroSerializer(client, orjson.dumps(AVRO).decode())
    framed["avro"] = [ser(v, _ctx("avro")) for v in AVRO_VALUES]
    pb2 = _pb2(tmp)
    item = pb2.Basket.Item(sku="A-1", qty=3, attrs={"color": "red"})
    basket = pb2.Basket(items=[item])
    basket.at.seconds = 1_700_000_000
    pser = ProtobufSerializer(pb2.Basket, client, {"use.deprecated.format": False})
    iser = ProtobufSerializer(pb2.Basket.Item, client, {"use.deprecated.format": False})
    oser = ProtobufSerializer(pb2.Order, client, {"use.deprecated.format": False})
    framed["proto"] = [
        pser(basket, _ctx("proto")),
        iser(item, SerializationContext("items", MessageField.VALUE)),
        oser(pb2.Order(id=1 << 40, who="me"), SerializationContext("orders", MessageField.VALUE)),
    ]
    jser = JSONSerializer(orjson.dumps(JSON_SCHEMA).decode(), client)
    framed["json"] = [jser(v, _ctx("json")) for v in JSON_VALUES]
    # the registry's _schemas as a real registry stores them: Protobuf as its .proto text
    with LogWriter(root / "_schemas-0") as w:
        for subject in client.get_subjects():
            for version in client.get_versions(subject):
                reg = client.get_version(subject, version)
                text = PROTO if reg.schema.schema_type == "PROTOBUF" else reg.schema.schema_str
                w.append([Record(
                    SR.schema_key(subject, version),
                    SR.schema_value(subject, version, reg.schema_id, text,
                                    schema_type=reg.schema.schema_type or "AVRO"),
                )])  # fmt: skip
    for topic, values in framed.items():
        with LogWriter(root / f"{topic}-0") as w:
            w.append([Record(None, v) for v in values])
    return root, framed, client, pb2


def _values(root: Path, topic: str) -> list[dict]:
    proc = run_kseg("dump", root / f"{topic}-0", "--payload", "schema", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    return [e for e in events(proc.stdout) if e["type"] == "record"]


def test_avro_as_the_producer_wrote_it(produced):
    root, framed, client, _ = produced
    recs = _values(root, "avro")
    assert [r["value"] for r in recs] == AVRO_SHOWN
    assert {r["value_encoding"] for r in recs} == {"avro"}
    # and as Confluent's own deserializer reads the same bytes
    de = AvroDeserializer(client)
    for raw, shown in zip(framed["avro"], AVRO_SHOWN, strict=True):
        theirs = de(raw, _ctx("avro"))
        assert (
            theirs["price"] == Decimal(shown["price"])
            and theirs["raw"].decode("latin-1") == shown["raw"]
        )
        assert theirs["at"].isoformat() == shown["at"] and theirs["e"] == shown["e"]


def test_protobuf_with_message_indexes(produced):
    root, framed, _, pb2 = produced
    recs = _values(root, "proto")
    assert framed["proto"][1][5:7] == b"\x04\x02"  # Basket.Item: indexes [1, 0]
    assert [r["value"] for r in recs] == [
        {"items": [{"sku": "A-1", "qty": 3, "attrs": {"color": "red"}}],
         "at": "2023-11-14T22:13:20Z"},
        {"sku": "A-1", "qty": 3, "attrs": {"color": "red"}},
        {"id": str(1 << 40), "who": "me"},  # int64 as ProtoJSON writes it: a string
    ]  # fmt: skip
    assert {r["value_encoding"] for r in recs} == {"protobuf"}


def test_json_schema(produced):
    root, *_ = produced
    assert [r["value"] for r in _values(root, "json")] == JSON_VALUES
