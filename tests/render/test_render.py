"""The render layer (kseg.render): one module per format, for every command's events."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from kseg.events import Event
from kseg.render import data_only, emit, problems_only, show, streams
from kseg.render.csv import write_reset_csv
from kseg.render.fields import one_line, safe_path
from kseg.render.json import write_json, write_json_chunks
from kseg.render.table import write_tables
from kseg.render.text import LINES, seek_line, write_text

SEEK = {
    "type": "seek",
    "topic": None,
    "partition": None,
    "target": -1,
    "offset": 7,
    "timestamp": None,
    "leader_epoch": None,
    "segment": None,
    "position": None,
    "error": None,
}


def _render(command: str, events: list[dict], fmt: str) -> str:
    out = io.BytesIO()
    list(emit(command, iter(events), fmt, out))
    return out.getvalue().decode()


def test_every_command_has_a_text_line_and_json_is_the_events():
    summary = {"type": "summary", "identical": 1, "equivalent": 0, "missing": 0, "wrong": 2}
    text = _render("index check", [{**summary, "exit_code": 4}], "text")
    assert text == "1 identical, 0 equivalent, 0 missing, 2 wrong\n"
    assert set(LINES) == {
        "verify",
        "index rebuild",
        "index check",
        "restore",
        "seek",
        "offsets",
        "spark verify",
        "spark stats",
        "stats",
        "dump --count",
        "salvage",
        "txn",
        "replicas",
        "schemas",
    }
    salvaged = {
        "type": "summary",
        "partitions": 2,
        "salvaged": 1,
        "lost_records_at_most": 3,
        "lost_bytes": 120,
        "exit_code": 5,
    }
    assert _render("salvage", [salvaged], "text") == (
        "2 partitions: 1 salvaged; lost at most 3 records (120 bytes); exit 5\n"
    )
    row = {
        "type": "partition_stats",
        "topic": "t",
        "partition": 0,
        "records": 3,
        "uncompressed_bytes": None,
        "codecs": ["gzip", "none"],
        "codec_shares": {"gzip": 0.25, "none": 0.75},
        "max_timestamp": 1_700_000_000_000,
        "transactional_share": 1 / 3,
    }
    assert _render("stats", [row], "text") == (
        'partition topic="t" partition=0 records=3 codecs=gzip,none '
        "codec_shares=gzip:0.2500,none:0.7500 "
        "max_timestamp=1700000000000 (2023-11-14T22:13:20.000Z) transactional_share=0.3333\n"
    )
    counts = [
        {"type": "match_count", "topic": "t", "partition": 0, "matches": 1},
        {"type": "match_count", "topic": None, "file": "/x/a.log", "matches": 2},
        {"type": "match_total", "matches": 3, "partitions": 2},
    ]
    assert _render("dump --count", counts, "text") == (
        "t-0: 1 match\n/x/a.log: 2 matches\ntotal: 3 matches in 2 partitions\n"
    )
    evs = [{"type": "stats", "topic": "a", "records": 3}, {"type": "stats", "topic": "b"}]
    lines = _render("spark stats", evs, "json").splitlines()
    assert [orjson.loads(x) for x in lines] == evs


def test_messages_go_to_stderr_never_to_stdout(capsys):
    streams.reset()  # a stdout buffer of an earlier in-process run is gone
    out = io.BytesIO()
    events = [
        {"type": "failure", "message": "x: cannot read"},
        {"type": "notice", "message": "held\nby someone"},
        {"type": "restored", "action": "truncate", "file": "f.log", "quarantine": "q"},
    ]
    shown = list(data_only(iter(events)))
    assert [e["type"] for e in shown] == ["restored"]
    assert capsys.readouterr().err == "kseg: x: cannot read\nkseg: held\\nby someone\n"
    show("restore", iter(events), "json", out)
    assert [orjson.loads(x)["type"] for x in out.getvalue().splitlines()] == ["restored"]


def test_an_event_knows_what_it_is_about_but_json_never_shows_it():
    ev = Event(SEEK, about=Path("/d/loose"))
    assert seek_line(ev) == "/d/loose: offset 7"
    assert orjson.loads(_render("seek", [ev], "json")) == SEEK
    # a path with a control character is quoted, and the event stays an Event while it is
    weird = Event({**SEEK, "segment": "a\nb.log", "position": 0}, about=Path("/d/x"))
    assert _render("seek", [weird], "text") == '/d/x: offset 7 in "a\\nb.log" at byte 0\n'


def test_restore_summary_names_the_directory_it_was_given():
    ev = Event({"type": "summary", "partitions": 2, "restored": 3, "exit_code": 0}, about="/q/run")
    assert _render("restore", [ev], "text") == "restored 3 actions in 2 partitions from /q/run\n"


def test_reset_csv_writes_only_rows():
    out = io.BytesIO()
    evs = [{"type": "reset", "topic": "t", "partition": 0, "offset": 5}, {"type": "other"}]
    assert len(list(write_reset_csv(evs, out))) == 2
    assert out.getvalue() == b"t,0,5\n"


def test_json_chunks_pass_finished_lines_through():
    out = io.BytesIO()
    list(write_json_chunks([[b'{"a":1}\n', {"type": "x"}]], out))
    assert out.getvalue() == b'{"a":1}\n{"type":"x"}\n'
    out = io.BytesIO()
    assert list(write_json([{"b": 2}], out)) == [{"b": 2}]
    assert out.getvalue() == b'{"b":2}\n'


def test_tables_group_by_type_and_print_the_summary_last(monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    out = io.BytesIO()
    evs = [
        {"type": "segment", "file": "a.log", "status": "ok", "size": 10, "valid_bytes": 10},
        {"type": "summary", "partitions": 1},
        {"type": "segment", "file": "b.log", "status": "corrupt", "size": 9, "valid_bytes": 3},
    ]
    list(write_tables(evs, out, width=100))
    text = out.getvalue().decode()
    assert text.index("a.log") < text.index("b.log") < text.index("summary: partitions 1")


def test_problems_only_drops_the_ok_segments():
    evs = [
        {"type": "segment", "status": "ok"},
        {"type": "segment", "status": "corrupt"},
        {"type": "finding", "status": "ok"},
    ]
    assert list(problems_only(evs)) == evs[1:]


@pytest.mark.parametrize("path", ["plain/orders-0", "a\nb/orders-0"])
def test_paths_and_messages_stay_one_line(path):
    assert "\n" not in safe_path(path) and "\n" not in one_line(path)
    out = io.BytesIO()
    list(write_text([{"type": "x", "file": path}], out, lambda ev: ev["file"]))
    assert out.getvalue().count(b"\n") == 1
