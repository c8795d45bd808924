"""Edges found by a review: each a case kseg once got wrong (a crash, a bound slipped past, a
wrong exit code, a registry rule), now held."""

from __future__ import annotations

import os
import shutil

import orjson
import pytest

from kseg.format import schema_registry as SR
from kseg.format.confluent_wire import write_frame
from kseg.format.record import Record
from kseg.schemas.decoder import SchemaDecoder
from kseg.schemas.registry import Registry
from kseg.storage.writer import LogWriter
from tests.helpers import events, run_kseg
from tests.schemas.wire import varint


def _registry(*schemas) -> Registry:
    reg = Registry("test")
    for i, (subject, version, sid, stype, text, *refs) in enumerate(schemas):
        reg.apply(SR.schema_key(subject, version),
                  SR.schema_value(subject, version, sid, text, schema_type=stype,
                                  references=refs[0] if refs else None), i)  # fmt: skip
    return reg


def _root(tmp_path, schemas, topic_values, headers=None):
    root = tmp_path / "data"
    with LogWriter(root / "_schemas-0") as w:
        for k, v in schemas:
            w.append([Record(k, v)])
    with LogWriter(root / "t-0") as w:
        for v in topic_values:
            w.append([Record(None, v, 0, headers or [])])
    return root


def test_an_avro_error_type_is_walked_as_a_record():
    err = {
        "type": "error",
        "name": "E",
        "fields": [{"name": "a", "type": {"type": "array", "items": "null"}}],
    }
    dec = SchemaDecoder(_registry(("e", 1, 1, "AVRO", orjson.dumps(err).decode())))
    got = dec.decode(write_frame(1, varint(50_000_000) + b"\x00"))
    assert got.error is not None and "more than the payload can hold" in got.error


def test_long_arrays_of_one_byte_items_decode():
    dec = SchemaDecoder(_registry(("a", 1, 1, "AVRO", '{"type":"array","items":"boolean"}')))
    got = dec.decode(write_frame(1, varint(70_000) + b"\x01" * 70_000 + b"\x00"))
    assert got.error is None and got.value == [True] * 70_000


def test_protobuf_values_without_a_json_form_are_findings():
    proto = ('syntax = "proto3"; import "google/protobuf/any.proto"; '
             'import "google/protobuf/timestamp.proto"; '
             "message M { google.protobuf.Any a = 1; google.protobuf.Timestamp t = 2; }")  # fmt: skip
    dec = SchemaDecoder(_registry(("m", 1, 1, "PROTOBUF", proto)))
    cls = dec._schema(1).message_type([0])
    m = cls()
    m.a.type_url = "type.googleapis.com/nowhere.Unknown"
    m.a.value = b"\x08\x01"
    got = dec.decode(write_frame(1, m.SerializeToString(), [0]))
    assert got.error is not None and "no JSON for this M" in got.error
    m = cls()
    m.t.seconds = 1 << 50  # far past year 9999
    got = dec.decode(write_frame(1, m.SerializeToString(), [0]))
    assert got.error is not None and "no JSON for this M" in got.error


def test_import_names_no_file_can_have_are_the_schemas_failure(tmp_path):
    ok = 'syntax = "proto3"; message A {}'
    root = _root(tmp_path, [
        (SR.schema_key("c", 1), SR.schema_value("c", 1, 1, ok, schema_type="PROTOBUF")),
        (SR.schema_key("u", 1), SR.schema_value("u", 1, 2, 'syntax = "proto3"; import "confluent"; message B {}',
                                                schema_type="PROTOBUF",
                                                references=[{"name": "confluent", "subject": "c", "version": 1}])),
        (SR.schema_key("l", 1), SR.schema_value("l", 1, 3, 'syntax = "proto3"; message C {}',
                                                schema_type="PROTOBUF",
                                                references=[{"name": "x" * 300 + ".proto", "subject": "c", "version": 1}])),
    ], [write_frame(2, b"", [0]), write_frame(3, b"", [0])])  # fmt: skip
    proc = run_kseg("dump", root / "t-0", "--payload", "schema", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    found = [e for e in events(proc.stdout) if e["type"] == "schema_finding"]
    assert [f["schema_id"] for f in found] == [2, 3]
    assert all("cannot write the schema's files for protoc" in f["message"] for f in found)


def test_an_id_a_hard_delete_freed_may_name_another_schema(tmp_path):
    root = _root(tmp_path, [
        (SR.schema_key("a", 1), SR.schema_value("a", 1, 5, '"string"')),
        (SR.schema_key("a", 1), None),  # the only version holding id 5 is gone: 5 is free
        (SR.schema_key("b", 1), SR.schema_value("b", 1, 5, '"long"')),
    ], [write_frame(5, varint(2))])  # fmt: skip
    assert run_kseg("schemas", root).returncode == 0
    proc = run_kseg("dump", root / "t-0", "--payload", "schema", "-f", "json")
    rec = next(e for e in events(proc.stdout) if e["type"] == "record")
    assert rec["value"] == 2 and rec["value_encoding"] == "avro"


def test_an_unreadable_schemas_segment_is_exit_8(tmp_path):
    root = _root(tmp_path, [(SR.schema_key("a", 1), SR.schema_value("a", 1, 1, '"int"'))],
                 [write_frame(1, varint(3))])  # fmt: skip
    (root / "_schemas-0" / "00000000000000000100.log").symlink_to(tmp_path / "gone.log")
    proc = run_kseg("dump", root / "t-0", "--payload", "schema", "-f", "json")
    assert proc.returncode == 8, proc.stderr
    errors = [e for e in events(proc.stdout) if e["type"] == "error"]
    assert errors and errors[0]["kind"] == "unreadable"
    # a record that does not parse, and then the unreadable segment: both bits
    root2 = _root(tmp_path / "two", [(b"{nope", b"{}"), (SR.schema_key("a", 1),
                  SR.schema_value("a", 1, 1, '"int"'))], [])  # fmt: skip
    (root2 / "_schemas-0" / "00000000000000000100.log").symlink_to(tmp_path / "gone.log")
    assert run_kseg("schemas", root2).returncode == 12


def test_no_schema_to_decode_by_is_never_clean(tmp_path, sr_root):
    root, *_ = sr_root
    empty = _root(tmp_path, [], [write_frame(1, b"\x02")])
    proc = run_kseg("dump", empty / "t-0", "--payload", "schema")
    assert proc.returncode == 16 and b"holds no schema" in proc.stderr
    export = tmp_path / "empty.json"
    export.write_bytes(b"[]")
    proc = run_kseg("dump", root / "payments-0", "--payload", "schema", "--schemas", export)
    assert proc.returncode == 16 and b"holds no schema" in proc.stderr
    proc = run_kseg("dump", root / "payments-0", "--payload", "schema", "--schemas", os.devnull)
    assert proc.returncode == 16 and b"neither a file nor a directory" in proc.stderr


def test_a_schema_id_in_a_header_is_not_read_as_a_frame(tmp_path):
    # an unframed Avro long 0 begins with byte 0: with the header, not a frame of id 0
    root = _root(tmp_path, [(SR.schema_key("a", 1), SR.schema_value("a", 1, 0, '"string"'))],
                 [b"\x00\x00\x00\x00\x00\x02x"],
                 headers=[("__value_schema_id", b"\x01" + bytes(16))])  # fmt: skip
    proc = run_kseg("dump", root / "t-0", "--payload", "schema", "-f", "json")
    evs = events(proc.stdout)
    rec = next(e for e in evs if e["type"] == "record")
    assert rec["value_encoding"] == "base64"
    (found,) = [e for e in evs if e["type"] == "schema_finding"]
    assert "named by a GUID in header __value_schema_id" in found["message"]


def test_tables_quote_decoded_text(tmp_path):
    root = _root(tmp_path, [(SR.schema_key("a\x1b[31m", 1), SR.schema_value("a\x1b[31m", 1, 1, '"string"'))],
                 [write_frame(1, varint(3) + b"\x1b[2")])  # fmt: skip
    env = {**os.environ, "COLUMNS": "300"}
    dump = run_kseg("dump", root / "t-0", "--payload", "schema", "-f", "table", env=env).stdout
    listed = run_kseg("schemas", root, "-f", "table", env=env).stdout
    assert b"\x1b" not in dump and b"\x1b" not in listed
    assert b'value=avro:"\\u001b[2"' in dump


def test_unknown_ids_are_not_kept():
    dec = SchemaDecoder(_registry(("a", 1, 1, "AVRO", '"int"')))
    for i in range(1000, 3000):
        assert "unknown schema id" in dec.decode(write_frame(i, b"")).error
    assert list(dec._compiled) == []


def test_json_numbers_beyond_64_bits_stay_exact():
    dec = SchemaDecoder(_registry(("j", 1, 1, "JSON", "{}")))
    got = dec.decode(write_frame(1, b'{"big": 123456789012345678901234567890, "n": 7}'))
    assert got.value == {"big": "123456789012345678901234567890", "n": 7}
    assert "not JSON" in dec.decode(write_frame(1, b'{"x": NaN, "pad": 1234567890123456789}')).error
    assert dec.decode(write_frame(1, b'{"i": 9223372036854775807}')).value == {"i": (1 << 63) - 1}
    for huge in (b'{"f": 1e400}', b'{"f": 1e400, "pad": 1234567890123456789012}'):
        assert "not JSON" in dec.decode(write_frame(1, huge)).error  # both paths alike
    lone = b'{"s": "\\ud800", "pad": 1234567890123456789012}'  # JSON output cannot hold it
    assert "not JSON" in dec.decode(write_frame(1, lone)).error


def test_decimals_are_plain_digits():
    schema = {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 10}
    dec = SchemaDecoder(_registry(("d", 1, 1, "AVRO", orjson.dumps(schema).decode())))
    assert dec.decode(write_frame(1, b"\x02\x01")).value == "0.0000000001"
    assert dec.decode(write_frame(1, b"\x02\x00")).value == "0.0000000000"


def test_references_to_the_latest_and_to_hard_deleted_versions():
    money = '{"type":"record","name":"Money","fields":[{"name":"u","type":"long"}]}'
    uses = '{"type":"record","name":"Use","fields":[{"name":"m","type":"Money"}]}'
    reg = _registry(
        ("money", 1, 1, "AVRO", '"int"'), ("money", 2, 2, "AVRO", money),
        ("use", 1, 3, "AVRO", uses, [{"name": "Money", "subject": "money", "version": -1}]),
        ("old", 1, 4, "AVRO", money),
        ("use2", 1, 5, "AVRO", uses, [{"name": "Money", "subject": "old", "version": 1}]),
    )  # fmt: skip
    reg.apply(SR.schema_key("old", 1), None, 9)  # hard-deleted: its text was read
    dec = SchemaDecoder(reg)
    assert dec.decode(write_frame(3, b"\x0e")).value == {"m": {"u": 7}}
    assert dec.decode(write_frame(5, b"\x0e")).value == {"m": {"u": 7}}


def test_a_value_under_another_key_is_kept_under_the_key():
    reg = Registry("t")
    reg.apply(SR.schema_key("k", 1), SR.schema_value("v", 2, 1, '"int"'), 0)
    assert list(reg.versions) == [("k", 1)] and "kept under the key's" in reg.problems[0]["message"]
    reg.apply(SR.schema_key("k", 1), None, 1)
    assert list(reg.versions) == []


@pytest.mark.parametrize("magic", ["true", "1.0", '"1"'])
def test_a_key_magic_must_be_the_integer_0_or_1(magic):
    with pytest.raises(ValueError, match="magic"):
        SR.parse_key(f'{{"keytype":"SCHEMA","subject":"s","version":1,"magic":{magic}}}'.encode())


def test_the_demo_holds_no_surprise(tmp_path):
    """The demo's framed topics: exactly the findings the fixture plants, exit 0, and 4 with
    --strict (the README's tour says 3 findings for payments)."""
    demo = tmp_path / "demo"
    assert run_kseg("demo", demo).returncode == 0
    proc = run_kseg("dump", demo, "--topic", "^payments$", "--payload", "schema")
    assert proc.returncode == 0
    assert proc.stdout.decode().splitlines()[-1].endswith("3 findings")
    shutil.rmtree(demo)
