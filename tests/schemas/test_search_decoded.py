"""dump's record search with --payload schema equals "filter the plain decoded dump by hand":
each key and value's text is its decoded value (a string as itself, anything else as compact
JSON) when it decodes, its stored bytes otherwise (kseg.dump.schema_events); every option
(--key, --value, --key-eq, --value-contains, with --from/--to-offset, --limit, --count and
--jobs) against the JSON dump of everything, filtered in Python. Hypothesis drives the library
entry the CLI calls (DumpRun, rendered by kseg.render.show_dump)."""

from __future__ import annotations

import base64
import io
import re

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg.dump.options import DumpOptions, search_options
from kseg.dump.run import DumpRun
from kseg.render import show_dump
from kseg.render.dump_json import JSON_LINES
from tests.helpers import events

DECODED = ("avro", "protobuf", "json-schema")
KEYS = ["^p-1$", "p-", "S-", "^INV", "x"]
VALUES = ['"currency":"EUR"', "refund", r"^\{", r'"ms":\d+', "^[0-9]+$", "Springfield", "AAAA"]
LITERALS = ["EUR", "p-2", '"note":null', "42", "S-3", "{not"]


def _run(root, **kw) -> list[dict]:
    rf, parts = search_options(kw.pop("key", None), kw.pop("value", None), None,
                               kw.pop("key_eq", None), kw.pop("value_contains", None), None)  # fmt: skip
    opts = DumpOptions(payload="schema", json_lines=JSON_LINES, record_filter=rf, **kw)
    out = io.BytesIO()
    run = DumpRun([root], opts)
    show_dump(run.chunks(), "json", out)
    return events(out.getvalue())


def _text(rec: dict, field: str) -> bytes | None:
    v, enc = rec[field], rec[field + "_encoding"]
    if v is None:
        return None
    if enc in DECODED:
        return v.encode() if type(v) is str else orjson.dumps(v)
    return base64.b64decode(v) if enc == "base64" else v.encode()


@pytest.fixture(scope="module")
def everything(sr_root):
    root, *_ = sr_root
    return root, [e for e in _run(root, topic="^(payments|invoices|shipments|clicks)$")
                  if e["type"] == "record"]  # fmt: skip


def _expected(recs, key, value, key_eq, value_contains, lo, hi, limit):
    out = []
    for r in recs:
        if (lo is not None and r["offset"] < lo) or (hi is not None and r["offset"] > hi):
            continue
        k, v = _text(r, "key"), _text(r, "value")
        if key and (k is None or not all(re.search(p.encode(), k) for p in key)):
            continue
        if key_eq and (k is None or any(k != e.encode() for e in key_eq)):
            continue
        if value and (v is None or not all(re.search(p.encode(), v) for p in value)):
            continue
        if value_contains and (v is None or any(c.encode() not in v for c in value_contains)):
            continue
        out.append((r["topic"], r["offset"]))
    return out[:limit] if limit is not None else out


opt = st.one_of(st.none(), st.lists(st.sampled_from(LITERALS), min_size=1, max_size=2))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    key=st.one_of(st.none(), st.lists(st.sampled_from(KEYS), min_size=1, max_size=2)),
    value=st.one_of(st.none(), st.lists(st.sampled_from(VALUES), min_size=1, max_size=2)),
    key_eq=opt,
    value_contains=opt,
    lo=st.one_of(st.none(), st.integers(0, 4)),
    hi=st.one_of(st.none(), st.integers(1, 7)),
    limit=st.one_of(st.none(), st.integers(1, 6)),
    jobs=st.sampled_from([1, 2]),
)
def test_search_on_decoded_values_is_the_hand_filter(
    everything, key, value, key_eq, value_contains, lo, hi, limit, jobs
):
    if not (key or value or key_eq or value_contains):
        key_eq = ["p-1"]
    root, recs = everything
    got = _run(root, topic="^(payments|invoices|shipments|clicks)$", key=key, value=value,
               key_eq=key_eq, value_contains=value_contains, from_offset=lo, to_offset=hi,
               limit=limit, jobs=jobs)  # fmt: skip
    shown = [(e["topic"], e["offset"]) for e in got if e["type"] == "record"]
    assert shown == _expected(recs, key, value, key_eq, value_contains, lo, hi, limit)
    counted = _run(root, topic="^(payments|invoices|shipments|clicks)$", key=key, value=value,
                   key_eq=key_eq, value_contains=value_contains, from_offset=lo, to_offset=hi,
                   limit=limit, count=True, jobs=jobs)  # fmt: skip
    assert counted[-1]["matches"] == len(shown)


def test_a_decoded_string_key_is_matched_as_itself(everything):
    root, _ = everything
    got = _run(root, topic="^payments$", key_eq=["p-2"])
    assert [e["offset"] for e in got if e["type"] == "record"] == [1]
