"""`kseg dump --payload schema` through the real entry point: the values as the producers wrote
them, one finding per key or value that does not decode, the summary, the exit codes; the
schemas found beside the paths, in several roots, in a damaged `_schemas`, or named."""

from __future__ import annotations

import os
import shutil
from base64 import b64decode

import pytest

from kseg.fixtures.schemas import write_bad_registry
from kseg.format import schema_registry as SR
from kseg.format.record import Record
from kseg.storage.writer import LogWriter
from tests.helpers import events, run_kseg

TOPICS = "^(payments|invoices|shipments|clicks)$"


def _dump(*args):
    proc = run_kseg("dump", *args, "--payload", "schema", "-f", "json")
    return proc, events(proc.stdout)


def test_every_value_as_written_and_every_failure_one_finding(sr_root):
    root, expected, bad = sr_root
    proc, evs = _dump(root, "--topic", TOPICS)
    assert proc.returncode == 0 and proc.stderr == b""
    recs = {(e["topic"], e["offset"]): e for e in evs if e["type"] == "record"}
    for where, value in expected.items():
        assert recs[where]["value"] == value, where
        assert recs[where]["value_encoding"] in ("avro", "protobuf", "json-schema")
    found = [e for e in evs if e["type"] == "schema_finding"]
    assert {(f["topic"], f["offset"]) for f in found} == set(bad)
    for f in found:
        field, start = bad[f["topic"], f["offset"]]
        assert f["field"] == field and f["message"].startswith(start), f
        rec = recs[f["topic"], f["offset"]]
        assert rec["value_encoding"] == "base64"  # shown raw, losslessly
        assert f["schema_id"] == rec.get("value_schema_id")
        # the finding follows its record
        assert evs.index(f) == evs.index(rec) + 1
    assert evs[-1] == {
        "type": "schema_summary", "schemas": f"_schemas in {root}/_schemas-0", "schema_ids": 10,
        "findings": len(bad), "strict": False, "notes": [],
    }  # fmt: skip
    # keys: Avro strings (payments), plain bytes elsewhere
    assert recs["payments", 0]["key"] == "p-1" and recs["payments", 0]["key_schema_id"] == 8
    assert recs["shipments", 0]["key"] == "S-1" and "key_schema_id" not in recs["shipments", 0]


def test_strict_makes_findings_invalid_data(sr_root):
    root, *_ = sr_root
    assert run_kseg("dump", root / "payments-0", "--payload", "schema", "--strict").returncode == 4
    clean = run_kseg("dump", root / "invoices-0", "--payload", "schema", "--strict")
    assert clean.returncode == 0, clean.stderr


def test_format_string_prints_decoded_values_and_says_findings_on_stderr(sr_root):
    root, *_ = sr_root
    proc = run_kseg("dump", root / "payments-0", "--payload", "schema", "--format-string",
                    "%o %k %S %s\\n", "--to-offset", "4")  # fmt: skip
    assert proc.returncode == 0
    lines = proc.stdout.decode().splitlines()
    assert lines[1] == '1 p-2 18 {"id":2,"amount":"-3.10","currency":"USD","note":"refund"}'
    assert lines[3].startswith("3 p-x 6 ")  # not decoded: the bytes as stored
    err = proc.stderr.decode().splitlines()
    assert err[0] == (
        f"kseg: {root}/payments-0/00000000000000000000.log offset 3: value (schema id 99) does "
        f"not decode: unknown schema id 99 (_schemas in {root}/_schemas-0: 10 schemas)"
    )
    assert err[1].endswith(
        "offset 4: value does not decode: truncated frame: 3 bytes, the header alone is 5"
    )
    assert err[-1] == f"kseg: schemas: _schemas in {root}/_schemas-0, 10 ids; 2 findings"


def test_text_and_table_show_the_findings_in_place(sr_root):
    root, *_ = sr_root
    text = run_kseg("dump", root / "payments-0", "--payload", "schema", "--from-offset", "3",
                    "--to-offset", "3")  # fmt: skip
    lines = text.stdout.decode().splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("| offset: 3 CreateTime"))
    assert lines[i + 1] == (
        f"| offset: 3 value (schema id 99) does not decode: unknown schema id 99 (_schemas in "
        f"{root}/_schemas-0: 10 schemas)"
    )
    assert lines[-1] == f"schemas: _schemas in {root}/_schemas-0, 10 ids; 1 finding"
    wide = {**os.environ, "COLUMNS": "300"}
    table = run_kseg("dump", root / "payments-0", "--payload", "schema", "-f", "table",
                     "--limit", "1", env=wide).stdout.decode()  # fmt: skip
    assert 'value=avro:{"id":1,"amount":"12.50","currency":"EUR","note":null}' in table


@pytest.mark.parametrize(
    "args, code, says",
    [
        (["--schemas", "/nonexistent"], 16, "/nonexistent: no such file or directory"),
        (["--payload", "auto", "--schemas", "."], 16, "--schemas is for --payload schema"),
        (["--payload", "auto", "--strict"], 16, "--strict is for --payload schema"),
    ],
)
def test_usage(sr_root, args, code, says):
    root, *_ = sr_root
    argv = ["dump", root / "payments-0", *args]
    if "--payload" not in args:
        argv += ["--payload", "schema"]
    proc = run_kseg(*argv)
    assert proc.returncode == code and says in proc.stderr.decode(), proc.stderr


def test_no_schemas_anywhere_is_a_usage_error(sr_root, tmp_path):
    root, *_ = sr_root
    shutil.copytree(root / "payments-0", tmp_path / "payments-0")
    proc = run_kseg("dump", tmp_path / "payments-0", "--payload", "schema")
    assert proc.returncode == 16 and proc.stdout == b""
    assert f"no _schemas topic found in or beside {tmp_path}/payments-0" in proc.stderr.decode()
    # named by --schemas: a partition dir, a root, an export
    for given in (root / "_schemas-0", root):
        proc = run_kseg("dump", tmp_path / "payments-0", "--payload", "schema", "--schemas", given)
        assert proc.returncode == 0 and b'avro:{"id":1' in proc.stdout


def test_several_roots_the_replica_that_read_furthest(sr_root, tmp_path):
    root, *_ = sr_root
    for broker in ("b1", "b2"):
        shutil.copytree(root, tmp_path / broker)
    lagging = tmp_path / "b1" / "_schemas-0"
    shutil.rmtree(lagging)
    with LogWriter(lagging) as w:  # a follower that has only the first schema
        w.append([Record(SR.schema_key("payments-value", 1),
                         SR.schema_value("payments-value", 1, 1, '"string"'))])  # fmt: skip
    proc, evs = _dump(tmp_path, "--topic", "^invoices$")
    assert proc.returncode == 0
    assert [e["value"]["number"] for e in evs if e["type"] == "record"] == ["INV-1", "INV-1"]
    summary = evs[-1]
    assert summary["schemas"] == f"_schemas in {tmp_path}/b2/_schemas-0"
    assert summary["notes"] == [
        f"1 other replica of _schemas (_schemas in {lagging}); this one reached offset 17, the "
        "highest"
    ]


def test_damage_in_schemas_stops_its_replay_there(sr_root, tmp_path):
    root, *_ = sr_root
    shutil.copytree(root, tmp_path / "data")
    log = tmp_path / "data" / "_schemas-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[-5] ^= 0xFF  # the last record (the hard delete's tombstone): a CRC mismatch
    log.write_bytes(bytes(data))
    proc, evs = _dump(tmp_path / "data" / "invoices-0")
    assert proc.returncode == 0
    first = evs[0]
    assert first["type"] == "schema_finding" and first["field"] is None
    assert "crc_mismatch" in first["message"] or "CRC" in first["message"]
    assert "the records after it are not replayed" in first["message"]
    assert [e["value"]["number"] for e in evs if e["type"] == "record"] == ["INV-1"]
    assert run_kseg("dump", tmp_path / "data" / "invoices-0", "--payload", "schema",
                    "--strict").returncode == 4  # fmt: skip


def test_problems_of_the_registry_are_findings(sr_root, tmp_path):
    root, *_ = sr_root
    bad = write_bad_registry(tmp_path / "_schemas-0")
    proc, evs = _dump(root / "payments-0", "--schemas", tmp_path / "_schemas-0")
    assert proc.returncode == 0
    problems = [e for e in evs if e["type"] == "schema_finding" and e["field"] is None]
    assert [p["offset"] for p in problems] == sorted(bad)


def test_headers_and_internal_topics_keep_their_modes(sr_root, tmp_path):
    root, *_ = sr_root
    with LogWriter(tmp_path / "h-0") as w:
        w.append([Record(b"k", b"\x00\x00\x00\x00\x07\x0e", 0, [("h", b"\x00\x01")])])
    shutil.copytree(root / "_schemas-0", tmp_path / "_schemas-0")
    proc, evs = _dump(tmp_path / "h-0")
    rec = next(e for e in evs if e["type"] == "record")
    assert rec["headers"] == [["h", "AAE="]] and rec["header_encodings"] == ["base64"]
    assert rec["value_encoding"] == "base64" and rec["value_schema_id"] == 7
    # _schemas itself: its JSON as text, no findings
    proc, evs = _dump(tmp_path / "_schemas-0")
    assert proc.returncode == 0 and not [e for e in evs if e["type"] == "schema_finding"]


def test_count_and_jobs(sr_root):
    root, *_ = sr_root
    proc = run_kseg("dump", root, "--topic", TOPICS, "--payload", "schema", "--value-contains",
                    "EUR", "--count", "--jobs", "2", "-f", "json")  # fmt: skip
    evs = events(proc.stdout)
    assert evs[-1] == {"type": "match_total", "matches": 3, "partitions": 4}


def test_records_decode_as_their_bytes_say(sr_root):
    """The raw bytes behind a finding are the stored bytes (base64 in JSON)."""
    root, *_ = sr_root
    _proc, evs = _dump(root / "payments-0", "--from-offset", "4", "--to-offset", "4")
    rec = next(e for e in evs if e["type"] == "record")
    assert b64decode(rec["value"]) == b"\x00\x00\x01"
