"""`kseg schemas` through the real entry point: the registry's subjects, versions and ids as
it holds them after replaying `_schemas`; problems; exports; exit codes."""

from __future__ import annotations

import orjson

from kseg.fixtures.schemas import SCHEMAS, write_bad_registry
from kseg.storage.writer import LogWriter
from tests.helpers import events, run_kseg


def test_listing_every_version_with_its_state(sr_root):
    root, *_ = sr_root
    proc = run_kseg("schemas", root, "-f", "json")
    assert proc.returncode == 0, proc.stderr
    evs = events(proc.stdout)
    rows = {(e["subject"], e["version"]): e for e in evs if e["type"] == "schema"}
    assert {(s[0], s[1]): sid for sid, s in SCHEMAS.items()} == {
        k: r["id"] for k, r in rows.items()
    }
    assert rows["old-value", 1]["state"] == "deleted"
    assert rows["gone-value", 1]["state"] == "hard-deleted"
    assert rows["payments-value", 2]["state"] == "live"
    assert rows["shipments-value", 1]["references"] == [
        {"name": "common/address.proto", "subject": "address", "version": 1}
    ]
    assert rows["clicks-value", 1]["schema_type"] == "JSON"
    assert orjson.loads(rows["payments-value", 1]["schema"])["name"] == "Payment"
    summary = evs[-1]
    assert summary["type"] == "summary" and summary["versions"] == len(SCHEMAS)
    assert (summary["deleted"], summary["hard_deleted"], summary["problems"]) == (1, 1, 0)
    text = run_kseg("schemas", root / "_schemas-0").stdout.decode().splitlines()
    assert text[0] == '"address" v1: id 5 PROTOBUF live (offset 6)'
    assert text[-1].startswith(
        f"9 subjects, 10 versions, 10 ids (1 deleted, 1 hard-deleted) from _schemas in {root}/_schemas-0"
    )


def test_problems_are_invalid_data(tmp_path):
    bad = write_bad_registry(tmp_path / "_schemas-0")
    proc = run_kseg("schemas", tmp_path / "_schemas-0", "-f", "json")
    assert proc.returncode == 4
    problems = [e for e in events(proc.stdout) if e["type"] == "schema_problem"]
    assert [p["offset"] for p in problems] == sorted(bad)


def test_nothing_to_list_is_never_clean(tmp_path, sr_root):
    root, *_ = sr_root
    with LogWriter(tmp_path / "data" / "_schemas-0"):
        pass
    proc = run_kseg("schemas", tmp_path / "data")
    assert proc.returncode == 16 and b"no schema in it" in proc.stderr
    proc = run_kseg("schemas", root / "payments-0" / "00000000000000000000.log")
    assert proc.returncode == 0  # a file of the data dir: the topic beside it
    proc = run_kseg("schemas", tmp_path / "nope")
    assert proc.returncode == 16 and b"no such file or directory" in proc.stderr
    (tmp_path / "empty").mkdir()
    proc = run_kseg("schemas", tmp_path / "empty")
    assert proc.returncode == 16 and b"neither a _schemas partition" in proc.stderr


def test_an_export(tmp_path):
    export = tmp_path / "schemas.json"
    export.write_bytes(orjson.dumps([{"subject": "s-value", "version": 3, "id": 12,
                                      "schemaType": "JSON", "schema": "{}"}]))  # fmt: skip
    proc = run_kseg("schemas", export)
    assert proc.returncode == 0
    assert proc.stdout.decode().splitlines()[0] == '"s-value" v3: id 12 JSON live'
