"""Every JSON object kind kseg prints has a JSON Schema (docs/schemas/, tools/schemas.py), and
every object the corpus of commands prints (every command, on clean, damaged, transactional,
replicated, 0.7 and real data dirs) is valid against its kind's: a field added, dropped,
renamed or retyped fails here until the contract changes with it (docs/json.md)."""

from __future__ import annotations

import copy

import pytest

jsonschema = pytest.importorskip("jsonschema", reason="the test extra's jsonschema")

from tools import schemas  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return list(schemas.corpus(tmp_path_factory.mktemp("corpus")))


def test_every_schema_is_a_schema():
    found = schemas.load()
    assert len(found) >= 40
    for kind, schema in found.items():
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["properties"]["type"] == {"const": kind}
        assert schema["additionalProperties"] is False and "type" in schema["required"]


def test_every_object_of_the_corpus_is_valid(runs):
    objects = [o for _, _, objs in runs for o in objs]
    assert len(objects) > 3000
    assert schemas.problems(objects, schemas.load()) == []
    # the corpus ran as meant: every command answered (none a usage error or a crash)
    assert [argv for argv, code, _ in runs if code not in (0, 1, 4)] == []


def test_every_schema_is_seen_and_documented(runs):
    seen = {o.get("type") for _, _, objs in runs for o in objs}
    found = schemas.load()
    unseen = set(found) - seen
    if not schemas.REAL.is_dir():  # kinds only the real brokers' data dirs show
        unseen -= {"quorum_state", "control"}
    assert not unseen  # a schema no command prints: a kind that is gone
    assert schemas.PAGE.read_text() == schemas.page(found, schemas.printed_by(runs))


def test_a_changed_object_fails_its_schema(runs):
    """The check can fail: an object with a field more, one less, or one of another type."""
    record = next(o for _, _, objs in runs for o in objs if o["type"] == "record")
    extra, missing, retyped = (copy.deepcopy(record) for _ in range(3))
    extra["new_field"] = 1
    del missing["offset"]
    retyped["offset"] = "12"
    for obj in (extra, missing, retyped):
        assert schemas.problems([obj], schemas.load())
    assert schemas.problems([{"type": "no_such_kind"}], schemas.load())
