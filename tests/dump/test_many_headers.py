"""Issue 35, item 2: a record of many headers is read through a Headers view and written in
chunks; every output is byte for byte what the plain lists gave.

The same partition is dumped in-process twice: every record's headers as a plain list
(kseg.format.batch.LAZY_HEADERS raised past any count) and every record's as a Headers view
(LAZY_HEADERS 0), in every format, payload mode and the record options that show headers."""

from __future__ import annotations

import sys

import pytest

from kseg import kernel
from kseg.cli.entry import run_app
from kseg.fixtures.tree import BASE_TS, FixedClock
from kseg.format import batch as v2
from kseg.format.errors import CorruptionError
from kseg.format.headers import Headers
from kseg.format.record import Record
from kseg.render import streams
from kseg.storage.writer import LogWriter

# names and values of every kind a renderer treats apart: empty, null, text, JSON, binary,
# non-ASCII and undecodable names, a quote, a long value; runs of equal headers and singles
_KINDS = [
    ("", b""),
    ("trace", None),
    ("id", b"42"),
    ("json", b'{"a": [1, 2]}'),
    ("bin", b"\xff\x00\xfe"),
    ("ключ", "знач".encode()),
    (b"\xff\xfebad", b"x"),
    ('q"uote', b'say "hi"\n'),
    ("long", b"v" * 300),
]


def _headers(n: int, i: int) -> list:
    out = []
    for j in range(n):
        k = _KINDS[(i + j // 5) % len(_KINDS)]  # runs of five equal headers, then the next kind
        out.append(k)
    return out


@pytest.fixture(scope="module")
def partition(tmp_path_factory):
    pdir = tmp_path_factory.mktemp("many-headers") / "hdrs-0"
    with LogWriter(pdir, clock=FixedClock(), magic=2) as w:
        for codec in ("none", "zstd", "gzip"):
            recs = [
                Record(
                    key=b"k%d" % i, value=b"v%d" % i, timestamp=BASE_TS + i, headers=_headers(n, i)
                )
                for i, n in enumerate((0, 1, 70, 200, 3, 9000))
            ]
            w.append(recs, compression=codec)
    return pdir


CASES = [
    ["-f", fmt, "--payload", mode]
    for fmt in ("json", "text", "table")
    for mode in ("auto", "utf8", "hex", "base64", "json", "none", "redact")
] + [
    ["--format-string", r"%o [%h] %k\n"],
    ["--format-string", r"%h|%h\n"],
    ["-f", "json", "--header", "id=4"],
    ["-f", "json", "--header", "trace", "--header", "long=v{300}"],
    ["-f", "text", "--header", "ключ=зн", "--header", "json"],
    ["-f", "json", "--skip-record-metadata"],
    ["-f", "json", "--decoder", "none"],
]


def _dump(monkeypatch, capsysbinary, lazy_from: int, args: list) -> bytes:
    monkeypatch.setattr(v2, "LAZY_HEADERS", lazy_from)
    streams.reset()
    monkeypatch.setattr(sys, "argv", ["kseg", "dump", *args])
    with pytest.raises(SystemExit) as exc:
        run_app()
    out, err = capsysbinary.readouterr()
    assert exc.value.code == 0, err
    return out


@pytest.mark.parametrize("args", CASES, ids=[" ".join(c) for c in CASES])
def test_headers_view_writes_the_same_bytes(partition, monkeypatch, capsysbinary, args):
    monkeypatch.setenv("KSEG_KERNEL", "python")  # the kernel renders JSON itself
    monkeypatch.setenv("COLUMNS", "150")
    kernel.reset()
    try:
        args = [*args, str(partition)]
        lists = _dump(monkeypatch, capsysbinary, 1 << 40, args)
        views = _dump(monkeypatch, capsysbinary, 0, args)
    finally:
        kernel.reset()
    assert views == lists
    assert len(lists) > 1000


def _record(headers: list, codec: str = "none") -> bytes:
    rec = Record(key=None, value=b"v", timestamp=BASE_TS, offset=0, headers=headers)
    return v2.build_batch([rec], 0, compression_id={"none": 0, "zstd": 4}[codec])


def test_headers_view_is_a_sequence_of_pairs():
    want = _headers(1000, 0)
    batch = v2.RecordBatch(_record(want), 0)
    (rec,) = batch.records()
    got = rec.headers
    assert type(got) is Headers
    named = [(k if isinstance(k, str) else k.decode("utf-8", "replace"), v) for k, v in want]
    assert got == named and named == got and got == tuple(named)
    assert (got != named) is False
    assert got != named[:-1] and got != [*named[:-1], ("x", None)]
    assert len(got) == 1000 and bool(got) and list(got) == named
    assert got[0] == named[0] and got[-1] == named[-1] and got[507] == named[507]
    assert got[3:40:7] == named[3:40:7] and got[::-100] == named[::-100]
    with pytest.raises(IndexError):
        got[1000]
    assert sum(n for *_, n in got.runs()) == 1000
    assert [(k, v) for k, v, n in got.runs() for _ in range(n)] == named
    assert [p for part in got.chunks(64) for p in part] == named
    assert repr(got).startswith("Headers(1000 headers")
    few = v2.RecordBatch(_record(want[:64]), 0)
    assert next(iter(few.records())).headers == named[:64]  # up to 64: a plain list
    assert type(next(iter(few.records())).headers) is list


@pytest.mark.parametrize(
    "cut",
    [
        ("key", lambda n: bytes([0x7F])),  # a key length past the record
        ("value", lambda n: b"\x00" + bytes([0x05])),  # value length -3
        ("value", lambda n: b"\x00" + bytes([0x7E])),  # value past the record
        ("varint", lambda n: b"\x00" + b"\xff" * 11),  # a varint longer than 10 bytes
    ],
    ids=["key-length", "value-negative", "value-past", "varint"],
)
@pytest.mark.parametrize("count", [10, 300])
def test_a_bad_header_is_reported_as_before(monkeypatch, cut, count):
    """The check without objects (scan_headers) fails where, and with the message, the old
    loop did: the same error with either threshold."""
    headers = [("", b"")] * count
    raw = bytearray(_record(headers))
    pos = raw.index(b"\x00\x00" * count)
    bad = cut[1](count)
    raw[pos + 2 * (count - 3) : pos + 2 * (count - 3) + len(bad)] = bad
    errors = []
    for lazy_from in (1 << 40, 0):
        monkeypatch.setattr(v2, "LAZY_HEADERS", lazy_from)
        batch = v2.RecordBatch(bytes(raw), 0)
        with pytest.raises(CorruptionError) as exc:
            list(batch.records())
        errors.append((exc.value.message, exc.value.field, exc.value.position))
    assert errors[0] == errors[1]
