"""`kseg dump` record search (--key, --value, --header, --key-eq, --value-contains), --count and
--format-string, through the real entry point. The matches are checked against kafka-python
decoding the same segments and filtering in the test (an independent implementation), and the
matching records' output against what plain `kseg dump` prints for them (rust and python
kernels)."""

from __future__ import annotations

import base64
import os
import re
import shutil
import struct

import orjson
import pytest
from kafka.record import MemoryRecords

from tests.helpers import run_kseg


def _kafka_python_records(root, topics=None):
    """(topic, partition, offset, key, value, headers) of every data record under ``root``'s
    partition dirs, decoded by kafka-python (control batches left out)."""
    out = []
    # KRaft snapshots (<offset>-<epoch>.checkpoint) are framed like a log: kseg searches them too
    logs = [*root.glob("*-*/*.log"), *root.glob("*-*/*-*.checkpoint")]
    for log in sorted(logs):
        topic, _, part = log.parent.name.rpartition("-")
        if topics is not None and topic not in topics:
            continue
        mr = MemoryRecords(log.read_bytes())
        while mr.has_next():
            batch = mr.next_batch()
            if batch is None:
                break
            if getattr(batch, "is_control_batch", False):
                continue
            for r in batch:
                headers = list(r.headers) if getattr(r, "headers", None) else []
                out.append((topic, int(part), r.offset, r.key, r.value, headers))
    return out


def _json(proc) -> list[dict]:
    return [orjson.loads(line) for line in proc.stdout.splitlines()]


def _found(proc) -> list[tuple]:
    return sorted(
        (e["topic"], e["partition"], e["offset"]) for e in _json(proc) if e["type"] == "record"
    )


def _want(records, keep) -> list[tuple]:
    return sorted((t, p, o) for t, p, o, k, v, h in records if keep(k, v, h))


def _header(h, name, rx=None):
    return any(k == name and (rx is None or (v is not None and re.search(rx, v))) for k, v in h)


CASES = [
    (("--key", r"key-1\d$"), lambda k, v, h: k is not None and re.search(rb"key-1\d$", k)),
    (("--key", "^key-7"), lambda k, v, h: k is not None and re.search(rb"^key-7", k)),
    (("--key", ""), lambda k, v, h: k is not None),  # every non-null key; null never matches
    (
        ("--value", "order 1[0-4] "),
        lambda k, v, h: v is not None and re.search(rb"order 1[0-4] ", v),
    ),
    (("--key-eq", "key-3"), lambda k, v, h: k == b"key-3"),
    (("--value-contains", "5fece"), lambda k, v, h: v is not None and b"5fece" in v),
    (("--header", "trace-id"), lambda k, v, h: _header(h, "trace-id")),
    (("--header", "trace-id=^0+3$"), lambda k, v, h: _header(h, "trace-id", rb"^0+3$")),
    (("--header", "source=."), lambda k, v, h: _header(h, "source", rb".")),  # null values
    (  # repeated options AND together, across kinds
        ("--key", "key-", "--key", "[05]$", "--value-contains", "order"),
        lambda k, v, h: (
            k is not None
            and re.search(rb"key-", k)
            and re.search(rb"[05]$", k)
            and v is not None
            and b"order" in v
        ),
    ),
    (
        ("--value", r"(?i)ORDER 2\b"),
        lambda k, v, h: v is not None and re.search(rb"(?i)ORDER 2\b", v),
    ),
]


@pytest.mark.parametrize(("args", "keep"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_matches_are_what_kafka_python_finds(tree, args, keep):
    want = _want(_kafka_python_records(tree), keep)
    proc = run_kseg("dump", tree, "-f", "json", *args)
    assert proc.returncode == 0, proc.stderr
    assert _found(proc) == want
    assert want  # every case finds something
    count = run_kseg("dump", tree, "-f", "json", "--count", *args)
    assert count.returncode == 0, count.stderr
    events = _json(count)
    per = {(e["topic"], e["partition"]): e["matches"] for e in events if e["type"] == "match_count"}
    for (t, p), n in per.items():
        assert n == sum(1 for w in want if w[:2] == (t, p))
    assert events[-1] == {"type": "match_total", "matches": len(want), "partitions": len(per)}


@pytest.mark.parametrize("kernel", ["rust", "python"])
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_matching_records_print_exactly_as_dump_prints_them(tree, kernel, fmt):
    """The filtered output is the plain dump's lines for the matching records and their
    batches (the file line before them), nothing else; the plain dump run with each kernel."""
    env = {**os.environ, "KSEG_KERNEL": kernel}
    plain = run_kseg("dump", tree / "orders-0", "-f", fmt, "--payload", "base64", env=env)
    found = run_kseg(
        "dump", tree / "orders-0", "-f", fmt, "--payload", "base64", "--key", "-1[0-9]$", env=env
    )
    assert plain.returncode == found.returncode == 0
    lines = plain.stdout.splitlines(keepends=True)
    got = found.stdout.splitlines(keepends=True)
    assert len(got) > 10
    keys = []
    for line in got:
        assert line in lines
        if fmt == "json":
            ev = orjson.loads(line)
            if ev["type"] == "record":
                keys.append(base64.b64decode(ev["key"]))
        elif line.startswith(b"| offset"):
            keys.append(base64.b64decode(re.search(rb'key: base64:"([^"]*)"', line).group(1)))
    assert keys and all(re.search(rb"-1[0-9]$", k) for k in keys)
    # in the plain dump's order; each record right after its batch (or a sibling record)
    positions = [lines.index(line) for line in got]
    assert positions == sorted(positions)


def test_filters_combine_with_offset_and_time_selectors(tree):
    recs = _kafka_python_records(tree, {"orders"})
    proc = run_kseg(
        "dump", tree, "--topic", "^orders$", "-f", "json", "--from-offset", "60",
        "--to-offset", "150", "--key", "key-1",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    want = _want(recs, lambda k, v, h: k is not None and b"key-1" in k)
    assert _found(proc) == [w for w in want if 60 <= w[2] <= 150]
    assert _found(proc)
    limited = run_kseg("dump", tree, "-f", "json", "--key", "key-1", "--limit", "3")
    assert len(_found(limited)) == 3


def test_control_records_and_non_record_files_never_show(tree):
    proc = run_kseg("dump", tree / "txn-0", "-f", "json", "--value", "")
    kinds = {e["type"] for e in _json(proc)}
    assert kinds == {"file", "batch", "record"}
    files = {e["file"].rsplit(".", 1)[1] for e in _json(proc) if e["type"] == "file"}
    assert files == {"log"}
    # with no filter the same dir has control records and index files
    plain = {e["type"] for e in _json(run_kseg("dump", tree / "txn-0", "-f", "json"))}
    assert {"control", "index_entry"} <= plain


def test_count_in_every_format(tree):
    text = run_kseg("dump", tree, "--key-eq", "key-1", "--count")
    assert text.returncode == 0
    lines = text.stdout.decode().splitlines()
    want = _want(_kafka_python_records(tree), lambda k, v, h: k == b"key-1")
    assert lines[-1] == f"total: {len(want)} matches in {len(lines) - 1} partitions"
    assert "orders-0: " in text.stdout.decode()
    table = run_kseg("dump", tree, "--key-eq", "key-1", "--count", "-f", "table")
    assert table.returncode == 0
    assert b"matches" in table.stdout and f"summary: matches {len(want)}".encode() in table.stdout
    plain = run_kseg("dump", tree / "orders-1", "--count")  # no filter: every data record
    n = sum(1 for r in _kafka_python_records(tree, {"orders"}) if r[1] == 1)
    assert plain.stdout.decode().splitlines() == [
        f"orders-1: {n} matches",
        f"total: {n} matches in 1 partition",
    ]


def test_kafka07_messages_are_values_without_keys(log07):
    proc = run_kseg(
        "dump", log07, "-f", "json", "--payload", "base64", "--value-contains", "click 1"
    )
    assert proc.returncode == 0, proc.stderr
    msgs = [e for e in _json(proc) if e["type"] == "message"]
    assert msgs and all(b"click 1" in base64.b64decode(m["payload"]) for m in msgs)
    every = [
        e
        for e in _json(run_kseg("dump", log07, "-f", "json", "--payload", "base64"))
        if e["type"] == "message"
    ]
    assert len(msgs) == sum(1 for m in every if b"click 1" in base64.b64decode(m["payload"]))
    assert len(msgs) < len(every)
    assert _json(run_kseg("dump", log07, "-f", "json", "--key", "")) == []  # no keys in 0.7
    count = run_kseg("dump", log07, "--count", "-f", "json", "--value-contains", "click 1")
    assert _json(count)[-1]["matches"] == len(msgs)


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("--key", "("), "--key"),
        (("--value", "[a-"), "--value"),
        (("--header", "h=(?P<"), "--header"),
        (("--header", "=x"), "--header"),
        (("--format-string", "%q"), "--format-string"),
        (("--format-string", "abc%"), "--format-string"),
        (("--key", "x", "--batches-only"), "--batches-only"),
        (("--count", "--format-string", "%k"), "--count"),
    ],
)
def test_usage_mistakes_are_one_line_and_16(tree, args, option):
    proc = run_kseg("dump", tree, *args)
    assert proc.returncode == 16
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and option in err and "Traceback" not in err


def test_corruption_is_reported_and_the_rest_searched(corrupt_cases, tmp_path):
    case = next(c for c in corrupt_cases if c.kind == "crc_mismatch")
    pdir = tmp_path / case.partition_dir.name
    shutil.copytree(case.partition_dir, pdir)
    plain = _json(run_kseg("dump", pdir, "-f", "json"))
    found = run_kseg("dump", pdir, "-f", "json", "--key", "$^never")
    assert found.returncode == 4
    errors = [e for e in plain if e["type"] == "error"]
    assert errors and [e for e in _json(found) if e["type"] == "error"] == errors
    assert not [e for e in _json(found) if e["type"] == "record"]
    count = run_kseg("dump", pdir, "--count", "--key", "$^never")
    assert count.returncode == 4 and b"total: 0 matches" in count.stdout
    assert b"crc" in count.stderr


def test_format_string_prints_kcat_tokens(tree):
    plain = [
        e
        for e in _json(run_kseg("dump", tree / "orders-0", "-f", "json", "--payload", "base64"))
        if e["type"] == "record"
    ]
    fmt = r"%t|%p|%o|%k|%K|%s|%S|%T|%h|%%|%R\t\x41\n"
    proc = run_kseg("dump", tree / "orders-0", "--format-string", fmt)
    assert proc.returncode == 0, proc.stderr
    want = b""
    for e in plain:
        k = None if e["key"] is None else base64.b64decode(e["key"])
        v = None if e["value"] is None else base64.b64decode(e["value"])
        hs = b",".join(
            hk.encode() + b"=" + (b"" if hv is None else base64.b64decode(hv))
            for hk, hv in e["headers"]
        )
        want += b"|".join(
            [
                b"orders", b"0", b"%d" % e["offset"], k or b"", b"%d" % e["key_size"], v or b"",
                b"%d" % e["value_size"], b"%d" % e["timestamp"], hs, b"%",
                struct.pack(">i", e["value_size"]) + b"\tA\n",
            ]
        )  # fmt: skip
    assert proc.stdout == want
    assert len(plain) > 100


def test_format_string_with_a_filter_and_on_0_7(tree, log07):
    proc = run_kseg("dump", tree, "--key-eq", "key-3", "--format-string", r"%t-%p@%o\n")
    want = _want(_kafka_python_records(tree), lambda k, v, h: k == b"key-3")
    assert sorted(proc.stdout.decode().split()) == sorted(f"{t}-{p}@{o}" for t, p, o in want)
    k7 = run_kseg("dump", log07, "--format-string", r"%K %s\n", "--limit", "2")
    assert k7.returncode == 0 and k7.stdout.startswith(b"-1 click")


def test_real_data_matches_kafka_python(real_root):
    """Every real broker dir: --count with a value regex equals kafka-python's count."""
    roots = [p for p in real_root.rglob("*") if p.is_dir() and any(p.glob("*-[0-9]*/*.log"))]
    assert roots
    for root in roots:
        want = _want(
            _kafka_python_records(root), lambda k, v, h: v is not None and re.search(rb"[0-9]", v)
        )
        proc = run_kseg("dump", root, "--count", "-f", "json", "--value", "[0-9]", timeout=300)
        assert proc.returncode in (0, 4), proc.stderr
        # kafka-python reads the partitions' logs; a root's bootstrap.checkpoint is counted
        # on its own line (no topic)
        counts = [e for e in _json(proc) if e["type"] == "match_count"]
        assert sum(e["matches"] for e in counts if e.get("topic")) == len(want), root
