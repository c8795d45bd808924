"""The registry's state replayed from `_schemas` records (kseg.schemas.registry), record by
record as Confluent's KafkaStoreMessageHandler applies them, and loaded from REST exports."""

from __future__ import annotations

import orjson
import pytest

from kseg.fixtures.schemas import write_bad_registry
from kseg.format import schema_registry as SR
from kseg.outcome import BadOption
from kseg.schemas.registry import Registry
from kseg.schemas.sources import load_export, replay


def _reg(*records) -> Registry:
    reg = Registry("test")
    for offset, (k, v) in enumerate(records):
        reg.apply(k, v, offset)
    return reg


def _schema(subject, version, sid, text='"string"', **kw):
    return SR.schema_key(subject, version), SR.schema_value(subject, version, sid, text, **kw)


def test_the_latest_record_of_a_key_wins():
    reg = _reg(_schema("s", 1, 1, '"int"'), _schema("s", 1, 1, '"int"', deleted=True))
    assert reg.versions["s", 1].deleted and reg.by_id[1].schema == '"int"'
    assert reg.versions["s", 1].offset == 1


def test_a_soft_deleted_subject_still_resolves_its_ids():
    reg = _reg(
        _schema("s", 1, 1), _schema("s", 2, 2, '"int"'), _schema("s", 3, 3, '"long"'),
        (SR.subject_key(SR.DELETE_SUBJECT, "s"), SR.delete_subject_value("s", 2)),
    )  # fmt: skip
    assert [reg.versions["s", v].deleted for v in (1, 2, 3)] == [True, True, False]
    assert set(reg.by_id) == {1, 2, 3}


def test_a_hard_delete_leaves_the_registry_but_kseg_keeps_what_it_read():
    reg = _reg(_schema("s", 1, 5, '"int"', deleted=True), (SR.schema_key("s", 1), None))
    assert ("s", 1) not in reg.versions and reg.removed["s", 1].id == 5
    assert reg.by_id[5].schema == '"int"'  # records framed with id 5 still decode


def test_clear_subject_removes_the_deleted_versions_only():
    reg = _reg(
        _schema("s", 1, 1, deleted=True), _schema("s", 2, 2, '"int"'),
        (SR.subject_key(SR.CLEAR_SUBJECT, "s"), SR.clear_subject_value("s")),
    )  # fmt: skip
    assert list(reg.versions) == [("s", 2)] and list(reg.removed) == [("s", 1)]


def test_one_schema_in_two_subjects_shares_its_id_and_a_clash_is_skipped():
    reg = _reg(
        _schema("a", 1, 1, '"int"'), _schema("b", 1, 1, '"int"'), _schema("c", 1, 1, '"long"')
    )
    assert {sv for sv in reg.versions} == {("a", 1), ("b", 1)}
    assert len(reg.problems) == 1 and reg.problems[0]["offset"] == 2
    assert "already names another schema ('a' version 1)" in reg.problems[0]["message"]


def test_ids_are_per_context_and_the_default_context_answers_first():
    reg = _reg(_schema(":.other:s", 1, 1, '"long"'), _schema("s", 1, 1, '"int"'))
    assert not reg.problems and reg.by_id[1].subject == "s"


def test_karapace_keys_configs_modes_and_noops():
    reg = _reg(
        (SR.subject_key(SR.CONFIG, karapace=True), SR.config_value("FULL")),
        (SR.schema_key("s", 1, karapace=True),
         SR.schema_value("s", 1, 4, "syntax = \"proto3\";", schema_type="PROTOBUF", karapace=True)),
        (SR.subject_key(SR.MODE, "s"), SR.mode_value("READONLY", "s")),
        (SR.noop_key(), b"ignored"),
        (SR.subject_key(SR.MODE, "s"), None),
    )  # fmt: skip
    assert not reg.problems
    assert reg.by_id[4].schema_type == "PROTOBUF" and reg.configs == {
        None: {"compatibilityLevel": "FULL"}
    }
    assert reg.modes == {}


def test_what_the_registry_skips_is_a_problem_and_the_replay_goes_on(tmp_path):
    bad = write_bad_registry(tmp_path / "_schemas-0")
    reg = replay(tmp_path / "_schemas-0")
    got = {p["offset"]: p["message"] for p in reg.problems}
    assert sorted(got) == sorted(bad)
    for offset, start in bad.items():
        assert got[offset].startswith(start), (offset, got[offset])
    assert {sv for sv in reg.versions} == {("a-value", 1), ("d-value", 1)}


@pytest.mark.parametrize("shape", ["list", "one", "lines"])
def test_exports_as_the_rest_api_shows_them(tmp_path, shape):
    rows = [
        {"subject": "s", "version": 1, "id": 3, "schema": '"int"'},
        {"subject": "p", "version": 2, "id": 4, "schemaType": "PROTOBUF", "schema": "x",
         "references": [{"name": "a.proto", "subject": "a", "version": 1}]},
    ]  # fmt: skip
    f = tmp_path / "export.json"
    if shape == "list":
        f.write_bytes(orjson.dumps(rows))
    elif shape == "one":
        rows = rows[:1]
        f.write_bytes(orjson.dumps(rows[0]))
    else:
        f.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    reg = load_export([f])
    assert sorted(reg.by_id) == [r["id"] for r in rows]
    if shape != "one":
        assert reg.by_id[4].references[0].name == "a.proto"


def test_an_export_that_is_not_one_is_a_usage_error(tmp_path):
    f = tmp_path / "x.json"
    f.write_bytes(b"{nope\n")
    with pytest.raises(BadOption, match="line 1: not JSON"):
        load_export([f])
    f.write_bytes(b'[{"subject": "s", "version": 0, "id": 1, "schema": "x"}]')
    assert "version 0 is not an int32 >= 1" in load_export([f]).problems[0]["message"]


@pytest.mark.parametrize(
    "key, message",
    [
        (None, "a record without a key"),
        (b"[]", "not a JSON object"),
        (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":7}', "magic 7"),
        (b'{"keytype":"SCHEMA","subject":"s","version":-1,"magic":1}', "version -1"),
        (b'{"keytype":"SCHEMA","subject":5,"version":1,"magic":1}', "subject 5"),
    ],
)
def test_keys_are_checked(key, message):
    with pytest.raises(ValueError, match=message):
        SR.parse_key(key)
